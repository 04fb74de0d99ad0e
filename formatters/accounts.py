"""Replies of ``/agent link``, ``/agent unlink`` and ``/agent whoami``, the link modal, and the one DM
that tells a person the platform refused their linked key.

Pure: typed data in (:class:`bot.services.accounts.LinkStatus`, :class:`~bot.services.accounts.Linked`,
:class:`bot.roles.ResolvedUser`, the ``AGENT_BOT_SESSIONS_AS`` value), a Block Kit payload out. No key
is ever an input here: only its fingerprint (its last 4 characters).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from slack_sdk.models.blocks import Block

from bot.config import SessionsAs
from bot.outcomes import Invalid, Refused
from bot.roles import ResolvedUser, Role
from bot.services.accounts import Linked, LinkStatus
from formatters.blocks import Payload, actions, button, context, cut, esc, esc_text, header, message, section
from formatters.notices import error_message, why_role

LINK_CALLBACK: Final = "link.submit"
"""The modal's ``callback_id``; also its policy key (falls back to ``link``: :func:`bot.roles.minimum_role`)."""
LINK_OPEN_ACTION: Final = "link.open"
"""The button that opens the link modal (under a "link first" answer); its policy key falls back to ``link``."""
LINK_BLOCK: Final = "link_key"
LINK_INPUT: Final = "key"
MODAL_TITLE: Final = "Link your account"
MODAL_SUBMIT: Final = "Link"
MODAL_CLOSE: Final = "Cancel"
MODAL_EXPLAIN: Final = (
    "Sessions you start from Slack then run *as you* on the platform, with your permissions and under your name.\n"
    "Make an API key in the web application's API-key settings{where}, and paste it below. I check it with the "
    "platform once, keep it encrypted, and never show it again; `/agent unlink` deletes it."
)
MODAL_LABEL: Final = "Your platform API key"
MODAL_PLACEHOLDER: Final = "Paste the key here"
MODAL_ERROR_CHARS: Final = 150
"""The longest error Slack shows under a modal input."""
MAX_KEY_INPUT: Final = 512

LINKED: Final = ":white_check_mark: Linked: sessions you start now run as you on the platform ({ending})."
LINKED_FORBIDDEN: Final = (
    "The platform accepted the key but refused it the list of computers (403): your role there may not allow "
    "everything you ask me to do; the platform will say so when it refuses."
)
ORGANIZATION_WIDE: Final = (
    "Your link holds in every workspace of this Enterprise Grid organization (your Slack user is the same in each); "
    "`/agent unlink` in any of them removes it from all."
)
"""Said under a link (and by ``/agent whoami``) of a person of an Enterprise Grid organization."""
ENDING: Final = "key ending …{fingerprint}"
ENDING_SHORT: Final = "a short key, none of it shown"
UNLINKED: Final = ":wastebasket: Unlinked: I deleted your platform API key."
NOT_LINKED_BEFORE: Final = "You had no linked platform API key, so there was nothing to delete."
LINK_AGAIN_HINT: Final = "`/agent link` links one."
NOW_PERSON: Final = "Sessions need your own key now: `/agent link` links one."
NOW_BOT: Final = "Sessions you start now run with the bot's own key (this bot is set so), and their messages say so."

WHOAMI_TITLE: Final = "You and the bot"
WHOAMI_LINKED: Final = ":link: Your platform account is linked since {since} ({ending})."
WHOAMI_REFUSED: Final = (
    ":warning: The platform refused your linked key ({ending}) on {refused}, so I use it no more. Make a new key in "
    "the web application's API-key settings and run `/agent link`."
)
WHOAMI_UNREADABLE: Final = (
    ":warning: Your linked key ({ending}) can no longer be decrypted by the bot (its encryption key was changed). "
    "Run `/agent link` to link a key again."
)
WHOAMI_NOT_LINKED: Final = ":heavy_minus_sign: You have not linked a platform account. `/agent link` links one."
SESSIONS_PERSON_LINKED: Final = "Agent sessions you start run as you on the platform."
SESSIONS_PERSON_UNLINKED: Final = "Agent sessions need your own key here (`AGENT_BOT_SESSIONS_AS=person`): link one to start them."
SESSIONS_BOT_LINKED: Final = "Agent sessions you start run as you on the platform; without your key they would use the bot's."
SESSIONS_BOT_UNLINKED: Final = (
    "Agent sessions you start run with the bot's own key (`AGENT_BOT_SESSIONS_AS=bot`), and their messages say so; "
    "link your key to act as yourself."
)

REFUSED_DM: Final = (
    ":warning: The platform refused your linked API key ({ending}), so I did not do what you asked with it, nor with any other key."
)
REFUSED_DM_HINT: Final = "Make a new key in the web application's API-key settings, then run `/agent link` to link it."
LINKING_OFF_WHAT: Final = "I cannot link platform accounts: {reason}."
LINK_NEEDED: Final = ":link: Nothing was done on the platform: {reason}."
LINK_NEEDED_HINT: Final = "Link your own API key with `/agent link` (or the button), then ask again."
LINK_BUTTON: Final = "Link your account"


def ending(fingerprint: str) -> str:
    """``key ending …abcd`` (mrkdwn-safe), or that a short key shows nothing."""
    return ENDING.format(fingerprint=esc(fingerprint)) if fingerprint else ENDING_SHORT


def when(moment: dt.datetime) -> str:
    """``2026-11-22 07:00 UTC``."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def link_modal(*, app_url: str | None, channel: str) -> dict[str, Any]:
    """The ``/agent link`` modal: where to make a key (the web application at ``app_url``, when
    known) and one plain-text input for it; ``private_metadata`` is the channel it was opened from.
    (Slack has no masked input: the key shows while it is typed, in this modal only.)"""
    where = f" at {esc(app_url)}" if app_url else ""
    return {
        "type": "modal",
        "callback_id": LINK_CALLBACK,
        "private_metadata": channel,
        "title": {"type": "plain_text", "text": MODAL_TITLE},
        "submit": {"type": "plain_text", "text": MODAL_SUBMIT},
        "close": {"type": "plain_text", "text": MODAL_CLOSE},
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": MODAL_EXPLAIN.format(where=where)}},
            {
                "type": "input",
                "block_id": LINK_BLOCK,
                "label": {"type": "plain_text", "text": MODAL_LABEL},
                "element": {
                    "type": "plain_text_input",
                    "action_id": LINK_INPUT,
                    "max_length": MAX_KEY_INPUT,
                    "placeholder": {"type": "plain_text", "text": MODAL_PLACEHOLDER},
                },
            },
        ],
    }


def modal_errors(outcome: Invalid | Refused) -> dict[str, str]:
    """``response_action: errors`` of the modal for a key that was not linked (never the key itself)."""
    if isinstance(outcome, Refused):
        return {LINK_BLOCK: cut(LINKING_OFF_WHAT.format(reason=outcome.reason), MODAL_ERROR_CHARS)}
    return {LINK_BLOCK: cut(f"{outcome.message} {outcome.hint}".strip(), MODAL_ERROR_CHARS)}


def linking_off_message(refused: Refused, hint: str) -> Payload:
    """``/agent link`` when linking is off (no encryption key): what and who can fix it."""
    return error_message(LINKING_OFF_WHAT.format(reason=refused.reason), hint)


def linked_message(linked: Linked) -> Payload:
    """The confirmation of a link (a DM): it is done, and which key (its last 4 characters); in an
    Enterprise Grid organization, that it holds in each of its workspaces (:data:`ORGANIZATION_WIDE`)."""
    text = LINKED.format(ending=ending(linked.fingerprint))
    blocks: list[Block] = [section(text)]
    if linked.forbidden:
        blocks.append(context(LINKED_FORBIDDEN))
    if linked.enterprise_id:
        blocks.append(context(ORGANIZATION_WIDE))
    return message(blocks, text)


def unlinked_message(removed: bool, sessions_as: SessionsAs) -> Payload:
    """``/agent unlink``: deleted (and what sessions do now), or there was nothing to delete."""
    if not removed:
        return message([section(NOT_LINKED_BEFORE), context(LINK_AGAIN_HINT)], f"{NOT_LINKED_BEFORE} {LINK_AGAIN_HINT}")
    now = NOW_BOT if sessions_as == "bot" else NOW_PERSON
    return message([section(UNLINKED), context(now)], f"{UNLINKED} {now}")


def whoami_message(user: ResolvedUser, status: LinkStatus, sessions_as: SessionsAs) -> Payload:
    """``/agent whoami``: the person's role and why (:attr:`bot.roles.ResolvedUser.source`), their
    link (since when, refused, unreadable, or none; in an Enterprise Grid organization, that it holds in
    each of its workspaces) and what ``AGENT_BOT_SESSIONS_AS`` means for them."""
    you, _hint = why_role(Role.guest, user.role.name, user.source, user.email)  # escaped there
    if not status.linked:
        link = WHOAMI_NOT_LINKED
    elif status.refused_at is not None:
        link = WHOAMI_REFUSED.format(ending=ending(status.fingerprint), refused=when(status.refused_at))
    elif not status.readable:
        link = WHOAMI_UNREADABLE.format(ending=ending(status.fingerprint))
    else:
        assert status.since is not None
        link = WHOAMI_LINKED.format(since=when(status.since), ending=ending(status.fingerprint))
    usable = status.usable
    if sessions_as == "bot":
        sessions = SESSIONS_BOT_LINKED if usable else SESSIONS_BOT_UNLINKED
    else:
        sessions = SESSIONS_PERSON_LINKED if usable else SESSIONS_PERSON_UNLINKED
    if status.linked and status.enterprise_id:
        link = f"{link}\n{ORGANIZATION_WIDE}"
    return message([header(WHOAMI_TITLE), section(you), section(link), context(sessions)], f"{you} {link} {sessions}")


def link_needed(refused: Refused) -> Payload:
    """The answer to someone who must link their own key before the agent is asked anything in
    their name (:class:`bot.services.sessions.LinkNeeded`): why (its reason, escaped), what to do,
    and a button that opens the link form (:data:`LINK_OPEN_ACTION`)."""
    text = LINK_NEEDED.format(reason=esc_text(refused.reason))
    blocks: list[Block] = [section(text), context(LINK_NEEDED_HINT), actions(button(LINK_BUTTON, LINK_OPEN_ACTION, style="primary"))]
    return message(blocks, f"{text} {LINK_NEEDED_HINT}")


def key_refused_dm(fingerprint: str) -> Payload:
    """The DM a person gets once when the platform refuses their linked key (401/403): nothing was
    done with another key, and how to link again."""
    text = REFUSED_DM.format(ending=ending(fingerprint))
    return message([section(text), context(REFUSED_DM_HINT)], f"{text} {REFUSED_DM_HINT}")
