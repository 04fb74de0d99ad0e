"""``/agent computers``: the fleet of remote computers, and the "Retry install" button.

    /agent computers

Lists every computer (GET /api/v0/computers, management-api-v0.md "Computer"), problems first. A
computer in ``error`` carries a button (action id ``computers.retry_install``, value the computer id;
policy: manager, enforced by the role-check middleware) that calls
``POST /api/v0/computers/{id}/install-deps`` (202 with the computer record) and then replaces the
clicked message with the re-read fleet (``respond(replace_original=True)`` on the click's
response_url, which edits an ephemeral reply and a channel message alike), re-polling the fleet at
most ``len(POLL_DELAYS)`` times while the computer stays ``provisioning``.

Once only: the click is acked first; then the store key ``install-deps:{computer id}:{message ts}``
(the response_url when Slack sends no message ts) is claimed before install-deps is called, so a
second click on the same message, by anyone, on any replica, starts nothing and the clicker is told
so (Slack's own re-deliveries of one click are dropped earlier by the de-duplication middleware). A
failed call marks the key ``...:failed``, so a later click says the button is spent rather than busy.
A click on the same button in a ``computers`` alert (its section's block id
:data:`formatters.alerts_computers.ALERT_RETRY_BLOCK`; the alert is a channel message everyone sees,
and the role check above refuses whoever may not retry) claims and retries the same way, but leaves
the alert as it is: the alert is the incident's one message, which the alert service edits when the
computer recovers. The retry is noted in the alert's thread instead (who retried, the status now;
:func:`formatters.alerts_computers.retry_note`), or told to the clicker alone if that post fails.

Errors end in an ephemeral message and leave the clicked message as it was: 404 (the computer is
gone), and any other Agent API failure (:func:`handlers.router.action_listener` replies with
:func:`handlers.router.describe_api_error`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from bot.api import AgentAPIError, Computer, NotFoundError
from bot.commands import SubCommand
from bot.slack import SlackFailure
from formatters.alerts_computers import ALERT_RETRY_BLOCK, retry_note
from formatters.computers import (
    RETRY_ACTION,
    already_retrying,
    computer_gone,
    computer_list,
    retry_failed_before,
    retry_started,
)
from handlers.router import ActionRequest, CommandRequest, Router, UserInputError, action_listener, describe_api_error

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

SPEC = SubCommand(
    name="computers",
    summary="The remote computers agent sessions run on: status, host, provisioning steps; retry a failed install.",
    usage="/agent computers",
    examples=("/agent computers",),
    details=(
        "Computers in error come first, then those still provisioning. A computer in error has a "
        "*Retry install* button (managers and owners) that restarts its dependency install once, "
        "however often it is clicked, and updates the message with the new status."
    ),
)

POLL_DELAYS = (1.0, 2.0)
"""Seconds to wait before each re-read of the fleet after a retry, while the computer is provisioning."""
NO_COMPUTER_ID = "This button does not name a computer."

Sleep = Callable[[float], Awaitable[Any]]


async def handle_computers(request: CommandRequest) -> None:
    """Answer ``/agent computers`` with the fleet (ephemeral), with Retry buttons only for a viewer
    the policy lets press them."""
    if request.command.args or request.command.options:
        raise UserInputError("`/agent computers` takes no arguments.", f"Usage: `{SPEC.usage}`")
    policy = request.services.policy
    fleet = await request.services.agent.list_computers()
    may_retry = policy.allows(request.user, RETRY_ACTION)
    await request.reply(computer_list(fleet, may_retry=may_retry, retry_role=policy.minimum(RETRY_ACTION).name))


def claim_key(computer_id: str, body: dict) -> str:
    """The once-only key of a Retry click: the computer and the clicked message."""
    container = body.get("container") or {}
    where = container.get("message_ts") or (body.get("message") or {}).get("ts") or body.get("response_url") or ""
    return f"install-deps:{computer_id}:{where}"


async def retry_install(request: ActionRequest, *, sleep: Sleep = asyncio.sleep) -> None:
    """Run one Retry click (acked and role-checked by :func:`handlers.router.action_listener`):
    claim, install-deps, show, re-poll (module docstring). ``sleep`` waits the :data:`POLL_DELAYS`
    (seconds; injectable for tests). Raises :class:`UserInputError` for a button without a
    computer id, and the Agent API's errors other than 404 (after marking the key failed); the
    listener turns both into an ephemeral reply."""
    computer_id = request.value
    user_id = request.user.user_id
    services = request.services
    if not computer_id:
        raise UserInputError(NO_COMPUTER_ID, "Run `/agent computers` for a fresh list.")
    key = claim_key(computer_id, request.body)
    if not await services.store.claim(key):
        failed = await services.store.was_claimed(f"{key}:failed")
        logger.info("retry of %s from the same message ignored (%s)", computer_id, "failed before" if failed else "in progress")
        await request.reply(retry_failed_before(computer_id) if failed else already_retrying(computer_id))
        return
    agent = services.agent
    try:
        computer = await agent.install_deps(computer_id=computer_id)
    except AgentAPIError as exc:
        await services.store.claim(f"{key}:failed")
        logger.warning("install-deps of %s failed: %s", computer_id, type(exc).__name__)
        if isinstance(exc, NotFoundError):
            await request.reply(computer_gone(computer_id))
            return
        raise
    logger.info("install-deps of %s started by %s", computer_id, user_id)
    if request.block_id == ALERT_RETRY_BLOCK:
        await _note_in_alert_thread(request, computer)
        return
    try:
        fleet = await agent.list_computers()
    except AgentAPIError as exc:
        await request.replace(retry_started(computer, user_id, None, problem=describe_api_error(exc)[0]))
        return
    await request.replace(retry_started(computer, user_id, fleet))
    for delay in POLL_DELAYS:
        if computer.status != "provisioning":
            return
        await sleep(delay)
        try:
            fleet = await agent.list_computers()
        except AgentAPIError as exc:  # the message already shows the retry; a failed poll just stops
            logger.info("re-poll of %s stopped: %s", computer_id, type(exc).__name__)
            return
        current = next((c for c in fleet if c.id == computer_id), None)
        if current is None:
            return
        if current.status != computer.status:
            await request.replace(retry_started(current, user_id, fleet))
        computer = current


async def _note_in_alert_thread(request: ActionRequest, computer: Computer) -> None:
    """Post who retried (and the status now) in the thread of the clicked alert; to the clicker
    alone when Slack refuses the post."""
    container = request.body.get("container") or {}
    thread = container.get("thread_ts") or (request.body.get("message") or {}).get("thread_ts") or request.message_ts
    note = retry_note(computer, request.user.user_id)
    posted = await request.services.slack.post(request.channel_id, note, thread_ts=thread or None)
    if isinstance(posted, SlackFailure):
        logger.warning("retry note in the thread of alert %s failed (%s)", request.message_ts, posted.error)
        await request.reply(note)


def register(app: Any, router: Router, services: Services) -> None:
    """Add ``/agent computers`` and the ``computers.retry_install`` button listener."""
    router.add(SPEC, handle_computers)
    app.action(RETRY_ACTION)(action_listener(services, retry_install))
