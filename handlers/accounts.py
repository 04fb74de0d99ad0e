"""``/agent link``, ``/agent unlink``, ``/agent whoami``: a person's own platform account.

    /agent link      opens a modal to paste one's own platform API key; the submission checks it
                     (one call with that key), stores it encrypted, and confirms by DM
    /agent unlink    deletes it
    /agent whoami    one's role and why, whether one is linked (since when, or refused), and what
                     ``AGENT_BOT_SESSIONS_AS`` means for one's sessions
    "Link your account" button   under a "link first" answer of the sessions (:func:`formatters.accounts.link_needed`):
                     opens the same modal

Parse, call :class:`bot.services.accounts.Accounts` (``services.accounts``), format
(:mod:`formatters.accounts`), reply. The key is read from the modal's state once and handed to the
service as a ``SecretStr``; it is never echoed, logged or put in a reply. Role checks are the
middleware's (policy keys ``link``, ``unlink``, ``whoami``; the modal's ``link.submit`` and the
button's ``link.open`` fall back to ``link``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from pydantic import SecretStr

from bot.commands import SubCommand
from bot.errors import reported
from bot.roles import ResolvedUser, Role
from bot.services.accounts import Linked
from bot.services.accounts.service import LINKING_OFF_HINT
from bot.slack import SlackFailure
from formatters import accounts as fmt
from handlers.router import ActionRequest, CommandRequest, Router, UserInputError, action_listener

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

LINK = SubCommand(
    name="link",
    summary="Link your own platform API key: agent sessions you start then run as you.",
    usage="/agent link",
    examples=("/agent link",),
    details=(
        "Opens a form to paste an API key made in the web application's API-key settings. I check it with the platform "
        "once, keep it encrypted, and never show it again; linking again replaces it."
    ),
)
UNLINK = SubCommand(
    name="unlink",
    summary="Delete your linked platform API key.",
    usage="/agent unlink",
    examples=("/agent unlink",),
)
WHOAMI = SubCommand(
    name="whoami",
    summary="Your role and why, and whether your platform account is linked.",
    usage="/agent whoami",
    examples=("/agent whoami",),
)

NO_ARGUMENTS: Final = "`/agent {name}` takes no arguments."
NO_PASTING_HERE: Final = "Never paste a key in a command: `/agent link` opens a private form for it."
VIEW_FAILED: Final = "I could not open the form ({error})."
VIEW_FAILED_HINT: Final = "Please run `/agent link` again; a form can only be opened within 3 seconds of the command."


def team_of(body: dict[str, Any]) -> str:
    """The Slack team ID of a slash command (``team_id``) or an interaction (``team.id``, ``user.team_id``)."""
    return str(body.get("team_id") or (body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id") or "")


def _no_arguments(request: CommandRequest, spec: SubCommand) -> None:
    if request.command.args or request.command.options:
        raise UserInputError(NO_ARGUMENTS.format(name=spec.name), NO_PASTING_HERE if spec is LINK else f"Usage: `{spec.usage}`")


async def handle_link(request: CommandRequest) -> None:
    """``link``: the modal, or why linking is off. A key typed after ``/agent link`` is not read
    (it went through Slack's command text: it should be revoked), and the person is told so."""
    _no_arguments(request, LINK)
    await open_link_form(request, str(request.body.get("trigger_id") or ""), request.channel_id)


async def on_link_open(request: ActionRequest) -> None:
    """The "Link your account" button: the same modal as ``/agent link``."""
    await open_link_form(request, request.trigger_id, request.channel_id)


async def open_link_form(request: CommandRequest | ActionRequest, trigger_id: str, channel: str) -> None:
    """Open the link modal with ``trigger_id`` (valid 3 s), or say why linking is off. Raises
    :class:`UserInputError` when Slack did not open it."""
    services = request.services
    refusal = services.accounts.refusal
    if refusal is not None:
        await request.reply(fmt.linking_off_message(refusal, LINKING_OFF_HINT))
        return
    view = fmt.link_modal(app_url=services.settings.agent_app_url, channel=channel)
    opened = await services.slack.open_view(trigger_id, view)
    if isinstance(opened, SlackFailure):
        raise UserInputError(VIEW_FAILED.format(error=opened.error), VIEW_FAILED_HINT)


async def handle_unlink(request: CommandRequest) -> None:
    """``unlink``: delete the person's key."""
    _no_arguments(request, UNLINK)
    removed = await request.services.accounts.unlink(team_of(request.body), request.user.user_id)
    await request.reply(fmt.unlinked_message(removed, request.services.settings.sessions_as))


async def handle_whoami(request: CommandRequest) -> None:
    """``whoami``: role and why, link status, what ``AGENT_BOT_SESSIONS_AS`` means for them."""
    _no_arguments(request, WHOAMI)
    status = await request.services.accounts.status(team_of(request.body), request.user.user_id)
    await request.reply(fmt.whoami_message(request.user, status, request.services.settings.sessions_as))


def link_listener(services: Services) -> Any:
    """The Bolt listener of the link modal's submission: check and store the key before the ack
    (a refused key shows on the modal, ``response_action: errors``), then confirm by DM."""

    @reported
    async def listener(ack: Any, body: dict[str, Any], view: dict[str, Any], context: dict[str, Any]) -> None:
        user_id = str((body.get("user") or {}).get("id") or "")
        user: ResolvedUser = context.get("agent_user") or ResolvedUser(user_id, None, Role.guest, "not resolved")
        values = (view.get("state") or {}).get("values") or {}
        pasted = SecretStr(str(((values.get(fmt.LINK_BLOCK) or {}).get(fmt.LINK_INPUT) or {}).get("value") or ""))
        outcome = await services.accounts.link(team_of(body), user.user_id, pasted)
        if not isinstance(outcome, Linked):
            await ack(response_action="errors", errors=fmt.modal_errors(outcome))
            return
        await ack()
        told = await services.slack.post(user.user_id, fmt.linked_message(outcome))
        if isinstance(told, SlackFailure):
            logger.warning("could not confirm %s's link by DM: %s", user.user_id, told.error)

    return listener


def register(app: Any, router: Router, services: Services) -> None:
    """Add ``link``, ``unlink``, ``whoami`` and the link modal's submission."""
    for spec, handler in ((LINK, handle_link), (UNLINK, handle_unlink), (WHOAMI, handle_whoami)):
        router.add(spec, handler)
    app.view(fmt.LINK_CALLBACK)(link_listener(services))
    app.action(fmt.LINK_OPEN_ACTION)(action_listener(services, on_link_open))
