"""Short replies that are not data: errors, refusals, "working on it" notices.

Each returns a Block Kit payload (``{"text", "blocks"}``). The copy is in module constants so
tests import it instead of repeating the string. :func:`outcome_message` is the one way any
:data:`bot.outcomes.Outcome` (why a request did nothing) becomes an ephemeral message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from slack_sdk.models.blocks import Block

from bot.outcomes import Invalid, NotFound, NothingChanged, Outcome, Refused
from bot.roles import (
    SOURCE_NO_EMAIL,
    SOURCE_NOT_ORG_USER,
    SOURCE_ORG_UNKNOWN,
    SOURCE_ORG_USER,
    SOURCE_ROLES_FILE,
    Role,
    action_words,
    source_group,
)
from formatters.blocks import Payload, context, esc, esc_text, message, section

_SLACK_USER = re.compile(r"^[UW][A-Z0-9]{2,}$")

REFUSED = ":no_entry: Only {holders} can {action}."
REFUSED_NAMED = ":no_entry: Only {holders} can {action}: {people}."
REFUSED_NOBODY_KNOWN = ":no_entry: Only {holders} can {action}; whoever runs the bot can tell you who they are."
ROLE_HOLDERS = {
    "owner": "owners of the bot",
    "manager": "managers and owners",
    "member": "members",
    "guest": "people in this workspace",
}
"""Who holds a role or a higher one, by the role's name: "Only {holders} can ..."."""
YOU_LISTED = "You are a *{role}* in the bot's roles file."
YOU_LISTED_GROUP = "You are a *{role}* in the bot's roles file, through {group}."
YOU_ORG_USER = "You are a *{role}*: an organization user of the Agent platform whom the bot's roles file does not list."
YOU_NOT_ORG_USER = "You are a *{role}*: your Slack e-mail `{email}` is not an organization user of the Agent platform."
YOU_NO_EMAIL = (
    "You are a *{role}*: Slack gave me no e-mail address for you, so I cannot find you among the Agent platform's organization users."
)
YOU_ORG_UNKNOWN = "You count as a *{role}* for now: I could not read the Agent platform's organization users."
YOU_ARE = "You are a *{role}*."
HINT_PLATFORM = "Ask an admin of the Agent platform to add `{email}` to its organization, then try again in a few minutes."
HINT_NO_EMAIL = (
    "Make sure your Slack profile shows your work e-mail and ask an admin of the Agent platform to add it to its "
    "organization, then try again in a few minutes."
)
HINT_ORG_UNKNOWN = "Please try again in a minute; if it keeps happening, tell whoever runs the bot."
HINT_ASK_THEM = "Ask one of them to do it, or ask whoever runs the bot for the *{needed}* role in its roles file."
HINT_ROLE = "Ask whoever runs the bot for the *{needed}* role in its roles file."
PEOPLE_MAX = 5
"""At most this many people are named in a refusal."""
OTHER_WORKSPACE = (
    ":no_entry: This request came from a Slack workspace or app I am not installed for, so I did nothing. "
    "Use me in the workspace I was installed in, or ask whoever runs the bot to install it for this one."
)
WORKSPACE_UNCHECKED = (
    ":warning: I could not confirm which Slack workspace I belong to (Slack's auth.test failed), so I did nothing. "
    "Please try again in a minute; if it keeps happening, tell whoever runs the bot."
)
INTERNAL_ERROR = (
    ":warning: Something went wrong on my side. Please try again; "
    "if it keeps happening, give this reference to whoever runs the bot: `{ref}`."
)

OUTCOME_REFUSED = ":no_entry: You cannot {action}."
OUTCOME_REFUSED_BECAUSE = ":no_entry: You cannot {action}: {reason}."
WHO_CAN_HELP = "Who can help: {people}."
NOT_FOUND = "I have no {what} `{key}`."

DATABASE_DOWN = ":warning: I cannot reach my database right now, so I did nothing with this request."
DATABASE_DOWN_HINT = "Please try again in a minute; if it keeps happening, tell whoever runs the bot."


_ESCAPED_CHANNEL = re.compile(r"&lt;#([CG][A-Z0-9]{2,20})&gt;")
"""A channel link as :func:`esc_text` leaves it (``<#C0ENG>`` -> ``&lt;#C0ENG&gt;``): a bare channel
ID, nothing else (no ``|label``, no user or broadcast mention)."""


def _text_with_channels(text: str) -> str:
    """``text`` escaped (:func:`esc_text`), with its bare channel links (``<#C…>``, which the handlers
    build from IDs) kept as links: Slack shows the channel, and a channel link pings nobody."""
    return _ESCAPED_CHANNEL.sub(r"<#\1>", esc_text(text))


def error_message(what: str, hint: str = "", *, icon: str = ":warning:") -> Payload:
    """A failure: ``what`` happened (plain text, escaped here; a bare channel link ``<#C…>`` stays a
    link) and ``hint``, what to do next."""
    blocks: list[Block] = [section(f"{icon} {_text_with_channels(what)}")]
    if hint:
        blocks.append(context(_text_with_channels(hint)))
    return message(blocks, _text_with_channels(f"{what} {hint}".strip()))  # the fallback text is mrkdwn too


def refusal_message(
    key: str, needed: str, role: str, *, source: str = "", email: str | None = None, helpers: Sequence[str] = ()
) -> Payload:
    """The role check said no: what the person tried in words, who may do it, why the person's role
    is what it is, and what to do.

    ``key`` is the policy key (said with :func:`bot.roles.action_words`); ``needed`` and ``role``
    are role names (``"manager"``); ``source`` is :attr:`bot.roles.ResolvedUser.source` and
    ``email`` the e-mail Slack gave for the person; ``helpers`` are who may do it (Slack user IDs,
    shown as mentions, or ``@group`` handles, shown as written; at most :data:`PEOPLE_MAX`), named
    when ``needed`` is above member (for a member's action the way in is the organization or the
    roles file, not another person). A guest because of the Agent platform's organization (no
    e-mail from Slack, an e-mail that is not an organization user, the organization unreadable) is
    told so and what to do about it, rather than to ask for a role."""
    need = Role.parse(needed)
    holders = ROLE_HOLDERS.get(need.name, need.name)
    action = esc_text(action_words(key))
    if need <= Role.member:
        head = REFUSED.format(holders=holders, action=action)
    elif helpers:
        people = ", ".join(_person(h) for h in helpers[:PEOPLE_MAX])
        head = REFUSED_NAMED.format(holders=holders, action=action, people=people)
    else:
        head = REFUSED_NOBODY_KNOWN.format(holders=holders, action=action)
    you, hint = why_role(need, role, source, email)
    if not hint:
        hint = (HINT_ASK_THEM if helpers and need > Role.member else HINT_ROLE).format(needed=need.name)
    return message([section(f"{head}\n{you}"), context(hint)], f"{head} {you} {hint}")


def people_text(helpers: Sequence[str]) -> str:
    """Who can help, as mrkdwn: mentions for Slack user IDs, ``@group`` handles as written, at most
    :data:`PEOPLE_MAX`."""
    return ", ".join(_person(h) for h in helpers[:PEOPLE_MAX])


def _person(helper: str) -> str:
    """A helper as mrkdwn: ``<@U123>`` for a Slack user ID, an ``@group`` handle as written (escaped)."""
    return f"<@{helper}>" if _SLACK_USER.match(helper) else esc(helper)


def who_you_are(role: str, source: str, email: str | None) -> tuple[str, str]:
    """``(why the person has role, what to do about it)`` as a refusal of a member's action says
    them (the App Home of a guest says them too); the hint is never empty."""
    you, hint = why_role(Role.member, role, source, email)
    return you, hint or HINT_ROLE.format(needed=Role.member.name)


def why_role(need: Role, role: str, source: str, email: str | None) -> tuple[str, str]:
    """Why the person has ``role`` (a sentence), and what to do when the reason is the Agent
    platform's organization and the action is a member's (else ``""``: the caller says it)."""
    group = source_group(source)
    platform = need <= Role.member
    if group is not None:
        return YOU_LISTED_GROUP.format(role=role, group=esc(group)), ""
    if source == SOURCE_ROLES_FILE:
        return YOU_LISTED.format(role=role), ""
    if source == SOURCE_ORG_USER:
        return YOU_ORG_USER.format(role=role), ""
    if source == SOURCE_NOT_ORG_USER and email:
        return YOU_NOT_ORG_USER.format(role=role, email=esc(email)), HINT_PLATFORM.format(email=esc(email)) if platform else ""
    if source in (SOURCE_NO_EMAIL, SOURCE_NOT_ORG_USER):
        return YOU_NO_EMAIL.format(role=role), HINT_NO_EMAIL if platform else ""
    if source == SOURCE_ORG_UNKNOWN:
        return YOU_ORG_UNKNOWN.format(role=role), HINT_ORG_UNKNOWN if platform else ""
    return YOU_ARE.format(role=role), ""


def other_workspace_message(*, unchecked: bool = False) -> Payload:
    """A request from another workspace or app was refused (``unchecked``: the bot could not learn
    its own installation, so it refused everything)."""
    text = WORKSPACE_UNCHECKED if unchecked else OTHER_WORKSPACE
    return message([section(text)], text)


def internal_error_message(ref: str) -> Payload:
    """An unexpected failure: an apology and the reference id of the logged trace (never the trace)."""
    text = INTERNAL_ERROR.format(ref=esc(ref))
    return message([section(text)], text)


def database_down_message() -> Payload:
    """The bot's database did not answer, so the request was not processed (nothing applied, nothing
    recorded): what happened and to try again shortly."""
    return message([section(DATABASE_DOWN), context(DATABASE_DOWN_HINT)], f"{DATABASE_DOWN} {DATABASE_DOWN_HINT}")


def outcome_message(outcome: Outcome) -> Payload:
    """Why a request did nothing (:data:`bot.outcomes.Outcome`), as the ephemeral answer to whoever
    asked; every value is escaped.

    :class:`bot.outcomes.Refused`: what was tried and why not (":no_entry: You cannot {action}:
    {reason}."), or, with only ``needs``, who may (":no_entry: Only {holders} can {action}."); its
    ``who_can_help`` named under it as mentions (Slack user IDs) or ``@group`` handles, at most
    :data:`PEOPLE_MAX`. :class:`bot.outcomes.NotFound`: "I have no {what} `{key}`." and its hint.
    :class:`bot.outcomes.NothingChanged`: its message (:information_source:) and hint.
    :class:`bot.outcomes.Invalid`: :func:`error_message` of its message and hint."""
    if isinstance(outcome, Invalid):
        return error_message(outcome.message, outcome.hint)
    if isinstance(outcome, NothingChanged):
        return error_message(outcome.message, outcome.hint, icon=":information_source:")
    if isinstance(outcome, NotFound):
        return _not_found(outcome)
    return _refused(outcome)


def _not_found(outcome: NotFound) -> Payload:
    """As :func:`error_message` does, but the key in a code span (escaped once, backticks replaced)."""
    what = NOT_FOUND.format(what=esc_text(outcome.what), key=esc(outcome.key))
    blocks: list[Block] = [section(f":warning: {what}")]
    if outcome.hint:
        blocks.append(context(esc_text(outcome.hint)))
    return message(blocks, f"{what} {esc_text(outcome.hint)}".strip())


def _refused(outcome: Refused) -> Payload:
    action = esc_text(outcome.action)
    if outcome.reason:
        head = OUTCOME_REFUSED_BECAUSE.format(action=action, reason=esc_text(outcome.reason))
    elif outcome.needs:
        head = REFUSED.format(holders=esc_text(ROLE_HOLDERS.get(outcome.needs, outcome.needs)), action=action)
    else:
        head = OUTCOME_REFUSED.format(action=action)
    blocks: list[Block] = [section(head)]
    text = head
    if outcome.who_can_help:
        helping = WHO_CAN_HELP.format(people=", ".join(_person(h) for h in outcome.who_can_help[:PEOPLE_MAX]))
        blocks.append(context(helping))
        text = f"{head} {helping}"
    return message(blocks, text)
