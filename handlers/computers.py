"""``/agent computers``: the fleet of remote computers, and the "Retry install" button.

    /agent computers

Lists every computer (:meth:`bot.services.computers.ComputersService.fleet`), problems first. A
computer in ``error`` carries a button (action id ``computers.retry_install``, value the computer id;
policy: manager, enforced by the role-check middleware) that restarts its dependency install
(:meth:`bot.services.computers.ComputersService.start_install`) and then replaces the clicked message
with the re-read fleet (``respond(replace_original=True)`` on the click's response_url, which edits an
ephemeral reply and a channel message alike), re-polled while the computer stays ``provisioning``
(:meth:`bot.services.computers.ComputersService.watch`).

Once only: the click is acked first; then the store key ``install-deps:{computer id}:{message ts}``
(:func:`claim_key`; the response_url when Slack sends no message ts) is claimed before install-deps is
called, so a second click on the same message, by anyone, on any replica, starts nothing and the
clicker is told so (Slack's own re-deliveries of one click are dropped earlier by the de-duplication
middleware); after a failed call, a later click says the button is spent rather than busy.
A click on the same button in a ``computers`` alert (its section's block id
:data:`formatters.alerts_computers.ALERT_RETRY_BLOCK`; the alert is a channel message everyone sees,
and the role check above refuses whoever may not retry) claims and retries the same way, but leaves
the alert as it is: the alert is the incident's one message, which the alert service edits when the
computer recovers. The retry is noted in the alert's thread instead (who retried, the status now;
:func:`formatters.alerts_computers.retry_note`), or told to the clicker alone if that post fails.

Errors end in an ephemeral message and leave the clicked message as it was: 404 (the computer is
gone), and any other Agent API failure (:func:`handlers.router.action_listener` replies with
:func:`handlers.router.describe_api_error`)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncApp

from bot.api import AgentAPIError, Computer, NotFoundError
from bot.commands import SubCommand
from bot.services.computers import RetrySpent, Sleep
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

NO_COMPUTER_ID = "This button does not name a computer."


async def handle_computers(request: CommandRequest) -> None:
    """Answer ``/agent computers`` with the fleet (ephemeral), with Retry buttons only for a viewer
    the policy lets press them."""
    if request.command.args or request.command.options:
        raise UserInputError("`/agent computers` takes no arguments.", f"Usage: `{SPEC.usage}`")
    policy = request.services.policy
    fleet = await request.services.computers.fleet()
    may_retry = policy.allows(request.user, RETRY_ACTION)
    await request.reply(computer_list(fleet, may_retry=may_retry, retry_role=policy.minimum(RETRY_ACTION).name))


def claim_key(computer_id: str, body: dict[str, Any]) -> str:
    """The once-only key of a Retry click: the computer and the clicked message."""
    container = body.get("container") or {}
    where = container.get("message_ts") or (body.get("message") or {}).get("ts") or body.get("response_url") or ""
    return f"install-deps:{computer_id}:{where}"


async def retry_install(request: ActionRequest, *, sleep: Sleep = asyncio.sleep) -> None:
    """Run one Retry click (acked and role-checked by :func:`handlers.router.action_listener`):
    claim and install-deps, show, re-poll (module docstring). ``sleep`` waits the re-polls' delays
    (seconds, :data:`bot.services.computers.POLL_DELAYS`; injectable for tests). Raises
    :class:`UserInputError` for a button without a computer id, and the Agent API's errors other
    than 404; the listener turns both into an ephemeral reply."""
    computer_id = request.value
    user_id = request.user.user_id
    if not computer_id:
        raise UserInputError(NO_COMPUTER_ID, "Run `/agent computers` for a fresh list.")
    service = request.services.computers
    try:
        started = await service.start_install(computer_id, claim_key(computer_id, request.body))
    except NotFoundError:
        await request.reply(computer_gone(computer_id))
        return
    if isinstance(started, RetrySpent):
        await request.reply(retry_failed_before(computer_id) if started.failed_before else already_retrying(computer_id))
        return
    logger.info("install-deps of %s started by %s", computer_id, user_id)
    if request.block_id == ALERT_RETRY_BLOCK:
        await _note_in_alert_thread(request, started)
        return
    try:
        fleet = await service.fleet()
    except AgentAPIError as exc:
        await request.replace(retry_started(started, user_id, None, problem=describe_api_error(exc)[0]))
        return
    await request.replace(retry_started(started, user_id, fleet))
    async for current, fleet_now in service.watch(started, sleep=sleep):
        await request.replace(retry_started(current, user_id, fleet_now))


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


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Add ``/agent computers`` and the ``computers.retry_install`` button listener."""
    router.add(SPEC, handle_computers)
    app.action(RETRY_ACTION)(action_listener(services, retry_install))
