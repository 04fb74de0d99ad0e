"""Block Kit for ``usage`` alerts: one message per landed day and subscription.

Input: a :class:`bot.services.alerts.usage.UsageAlert` (the day, the subscription's thresholds, the
users and the organization total that crossed them, the models, clients and MCP servers used for the
first time, the Slack people of the users' e-mails). Output: ``{"text", "blocks"}``
(:func:`formatters.blocks.message`; about 8 blocks, never more than 50).

Users are named by their Slack real name and e-mail when Slack knows the e-mail, else by the
e-mail (or the user id when the API gave no e-mail); never a mention: the alert is posted into a
channel and must ping nobody (as the digest). Every API string (e-mails, user ids, model, client
and MCP server names) and every Slack real name goes through :func:`formatters.blocks.esc`, cut to
:data:`NAME_MAX` characters. Times are dates (UTC): an alert is read later than it is posted.

Days the evaluation could not have (issue #30, :attr:`bot.services.alerts.usage.UsageAlert.not_had`)
are named in a last line, in the words of ``/agent usage`` (:func:`formatters.usage.with_gaps`); a
complete alert says nothing of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from formatters.blocks import Payload, bullet_list, context, cut, esc, esc_text, header, message, number, section
from formatters.usage import with_gaps

if TYPE_CHECKING:
    from bot.services.alerts.usage import Figure, UsageAlert
    from bot.slack import SlackPerson

USAGE_TITLE = "Usage alert: {day}"
TEST_TITLE = "Test alert: usage, {day}"
TEST_NOTE = ":test_tube: A test of `/agent alerts test usage`: the last landed day, {day}, evaluated with these thresholds."
TEST_NOTHING = "Nothing crossed the thresholds on {day} and nothing was used for the first time: on such a day no alert is posted."
NOT_LANDED_SAMPLE = "No day has landed yet to evaluate; a real alert names the users, the total and what is new."
THRESHOLDS = (
    "Billable tokens of {weekday} {day} (UTC) against the average of the {days} days before \u00b7 "
    "thresholds: at least {spike} that average and at least {minimum}"
)
USERS_TITLE = "*Users above their usual level* ({count})"
USER_LINE = "{name}: {value} billable tokens, {factor} their {days}-day average of {usual}"
USER_FIRST = "{name}: {value} billable tokens, none in the {days} days before"
MORE_USERS = "and {n} more: `/agent usage {day} by user` ranks everyone"
TOTAL = "*Organization total:* {value} billable tokens, {factor} the {days}-day average of {usual}"
TOTAL_FIRST = "*Organization total:* {value} billable tokens, none in the {days} days before"
FIRST_SEEN_TITLE = "*Used for the first time* (in none of the {days} days before)"
FIRST_SEEN_LINE = "{what}: {names}"
MORE_NAMES = " and {n} more"
ALERT_HINT = "`/agent usage {day}` shows the day \u00b7 `/agent alerts mute usage for=1d` pauses these alerts"

USERS_SHOWN = 20
"""User lines an alert shows; the rest are counted with a pointer to ``/agent usage <day> by user``."""
NAMES_SHOWN = 10
"""Names of one kind (models, clients, MCP servers) an alert shows; the rest are counted."""
NAME_MAX = 80
"""Characters of one API name shown (a longer one is cut with an ellipsis)."""


def _factor(value: float) -> str:
    """A factor as people say it: ``3x``, ``2.5x``, ``12x``."""
    return f"{value:.1f}".removesuffix(".0") + "x" if value < 10 else f"{value:,.0f}x"


def _tokens(value: float) -> str:
    return number(value, compact=True)


def _threshold(value: int) -> str:
    """A ``min=`` threshold as typed: ``1M``, ``500K``, ``1.5M``, ``999``."""
    text = number(value, compact=True)
    head, suffix = (text[:-1], text[-1]) if text[-1].isalpha() else (text, "")
    return (head.rstrip("0").rstrip(".") if "." in head else head) + suffix


def user_label(name: str, people: Mapping[str, SlackPerson]) -> str:
    """A user as mrkdwn: ``Real Name (e-mail)`` when Slack knows the e-mail, else the e-mail or user
    id; escaped, each part cut to :data:`NAME_MAX`; never a mention."""
    person = people.get(name)
    shown = cut(esc(name), NAME_MAX)
    if person is not None and person.real_name.strip():
        return f"{cut(esc(person.real_name), NAME_MAX)} ({shown})"
    return shown


def _user_line(user: Figure, days: int, people: Mapping[str, SlackPerson]) -> str:
    name, value = user_label(user.name, people), _tokens(user.value)
    if user.factor is None:
        return USER_FIRST.format(name=name, value=value, days=days)
    return USER_LINE.format(name=name, value=value, factor=_factor(user.factor), days=days, usual=_tokens(user.usual))


def _names(what: str, names: tuple[str, ...]) -> str:
    shown = ", ".join(f"`{cut(esc(name), NAME_MAX)}`" for name in names[:NAMES_SHOWN])
    more = MORE_NAMES.format(n=len(names) - NAMES_SHOWN) if len(names) > NAMES_SHOWN else ""
    return FIRST_SEEN_LINE.format(what=what, names=shown + more)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def usage_alert(alert: UsageAlert, *, test: bool = False) -> Payload:
    """The usage alert of ``alert.day``: the thresholds, the users above them (at most
    :data:`USERS_SHOWN`), the organization total when it is above them, what was used for the first
    time; ``test`` marks it as a test of ``/agent alerts test usage`` (title and a note), and says so
    when the day found nothing; the days not had (``alert.not_had``) in a last line."""
    day = alert.day.isoformat()
    blocks: list = [header((TEST_TITLE if test else USAGE_TITLE).format(day=day))]
    if test:
        blocks.append(context(esc_text(TEST_NOTE.format(day=day))))
    minimum = _threshold(alert.minimum)
    if alert.baseline_days:
        blocks.append(
            context(
                THRESHOLDS.format(
                    weekday=alert.day.strftime("%A"), day=day, days=alert.baseline_days, spike=_factor(alert.spike), minimum=minimum
                )
            )
        )
    if alert.users:
        lines = [_user_line(user, alert.baseline_days, alert.people) for user in alert.users[:USERS_SHOWN]]
        blocks.append(section(USERS_TITLE.format(count=len(alert.users)) + "\n" + bullet_list(lines, limit=2900)))
        if len(alert.users) > USERS_SHOWN:
            blocks.append(context(esc_text(MORE_USERS.format(n=len(alert.users) - USERS_SHOWN, day=day))))
    total = alert.total
    if total is not None:
        value, days = _tokens(total.value), alert.baseline_days
        if total.factor is None:
            blocks.append(section(TOTAL_FIRST.format(value=value, days=days)))
        else:
            blocks.append(section(TOTAL.format(value=value, factor=_factor(total.factor), days=days, usual=_tokens(total.usual))))
    firsts = [
        _names(what, names)
        for what, names in (("Models", alert.new_models), ("Clients", alert.new_clients), ("MCP servers", alert.new_mcp_servers))
        if names
    ]
    if firsts:
        blocks.append(section(FIRST_SEEN_TITLE.format(days=alert.first_seen_days) + "\n" + bullet_list(firsts, limit=2900)))
    if alert.empty and test:
        blocks.append(section(TEST_NOTHING.format(day=day) if alert.baseline_days else NOT_LANDED_SAMPLE))
    blocks.append(context(esc_text(ALERT_HINT.format(day=day))))
    gaps = alert.not_had
    return with_gaps(message(blocks, _text(alert, test)), missing=gaps.missing, outage=gaps.outage, as_of=gaps.as_of)


def _text(alert: UsageAlert, test: bool) -> str:
    """The fallback text: one line of what the alert found."""
    found = []
    if alert.users:
        found.append(f"{_plural(len(alert.users), 'user')} at {_factor(alert.spike)} or more of their usual billable tokens")
    if alert.total is not None:
        found.append("the organization total " + (_factor(alert.total.factor) if alert.total.factor else "up from none"))
    new = [
        _plural(len(names), noun)
        for noun, names in (("model", alert.new_models), ("client", alert.new_clients), ("MCP server", alert.new_mcp_servers))
        if names
    ]
    if new:
        found.append("used for the first time: " + ", ".join(new))
    prefix = "Test alert: usage" if test else "Usage alert"
    return f"{prefix} for {alert.day.isoformat()}: " + ("; ".join(found) if found else "nothing crossed the thresholds") + "."
