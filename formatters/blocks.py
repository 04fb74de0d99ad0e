"""Small Block Kit helpers every formatter composes; built on ``slack_sdk.models.blocks``.

The helpers respect Slack's limits (https://docs.slack.dev/reference/block-kit/blocks), taking the
numbers from slack_sdk's models where it carries them: section text 3000 characters, 10 fields of
2000, header 150 (plain text), 10 context elements, 25 actions elements, 50 blocks a message.
Text that would not fit is cut with an ellipsis instead of failing at Slack.

Every string that came from the Agent API or from a user must pass through :func:`esc` before it
goes into mrkdwn, so that ``<!channel>`` or ``<https://evil|click>`` shows as text, never as a
ping or a link (Slack doc "Formatting text for app surfaces", escaping). :func:`esc` also makes a
value one harmless run of text: line breaks become spaces (a value cannot fake a line of the
reply), a backtick becomes ``ˋ`` (U+02CB; a value cannot leave the code span it is shown in), and
invisible format characters (bidi overrides and isolates, zero-width spaces, see
:data:`INVISIBLE`) are dropped (a value cannot reorder or hide text around it). Our own copy that
carries mrkdwn (code spans, several lines) goes through :func:`esc_text`, which only escapes
``&<>`` and drops invisible characters. Plain-text objects (:func:`header`, :func:`button`) get
:func:`plain`.

:func:`message` is the one way a formatter returns a payload: ``{"text": fallback, "blocks": [...]}``,
at most :data:`MAX_BLOCKS` blocks, with a context line "and N more" when blocks had to be dropped.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

MAX_BLOCKS = 50
SECTION_TEXT_MAX = SectionBlock.text_max_length
SECTION_FIELDS_MAX = SectionBlock.fields_max_length
FIELD_TEXT_MAX = 2000
HEADER_TEXT_MAX = HeaderBlock.text_max_length
CONTEXT_ELEMENTS_MAX = ContextBlock.elements_max_length
BUTTON_TEXT_MAX = 75
BUTTON_VALUE_MAX = 2000
FALLBACK_TEXT_MAX = 3000
UP, DOWN = "\u25b2", "\u25bc"

Payload = dict[str, Any]


INVISIBLE = frozenset(
    "\u061c\u180e\u200b\u200c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\u206a\u206b\u206c\u206d\u206e\u206f"
    "\ufeff\ufff9\ufffa\ufffb"
)
"""Invisible format characters dropped from every API/user string: Arabic letter mark, Mongolian
vowel separator, zero-width space and non-joiner, LRM/RLM, bidi embeddings, overrides and isolates,
word joiner and invisible operators, BOM, interlinear annotations. The zero-width *joiner* (U+200D)
stays: emoji sequences need it."""
BACKTICK_STAND_IN = "\u02cb"
_DROP = dict.fromkeys(map(ord, INVISIBLE))
_ONE_LINE = {
    **_DROP,
    **dict.fromkeys(map(ord, "\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029"), " "),
    ord("`"): BACKTICK_STAND_IN,
    ord("&"): "&amp;",
    ord("<"): "&lt;",
    ord(">"): "&gt;",
}
_TEXT = {**_DROP, ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;"}
_PLAIN = {key: value for key, value in _ONE_LINE.items() if key not in (ord("&"), ord("<"), ord(">"), ord("`"))}


def esc(value: object) -> str:
    """An API or user string made safe for mrkdwn (``None`` -> ``""``): ``&<>`` escaped, line
    breaks as spaces, backticks as ``ˋ``, invisible format characters dropped (module docstring)."""
    if value is None:
        return ""
    return str(value).translate(_ONE_LINE)


def esc_text(text: object) -> str:
    """Our own mrkdwn copy that may carry a user's words: ``&<>`` escaped and invisible format
    characters dropped; line breaks and code spans kept (``None`` -> ``""``)."""
    if text is None:
        return ""
    return str(text).translate(_TEXT)


def plain(value: object) -> str:
    """A string for a plain-text object (header, button): one line, invisible characters dropped."""
    if value is None:
        return ""
    return str(value).translate(_PLAIN)


def cut(text: str, limit: int) -> str:
    """``text`` shortened to at most ``limit`` characters, ending with an ellipsis when cut.

    An escape sequence (``&amp;``) is never split in half."""
    if len(text) <= limit:
        return text
    head = text[: max(limit - 1, 0)]
    amp = head.rfind("&")
    if amp != -1 and ";" not in head[amp:]:
        head = head[:amp]
    return head + "\u2026"


def header(text: str) -> HeaderBlock:
    """A header block; ``text`` is plain text (no escaping needed), cut to 150 characters."""
    return HeaderBlock(text=PlainTextObject(text=cut(plain(text).strip() or " ", HEADER_TEXT_MAX), emoji=True))


def section(text: str, *, fields: Sequence[str] = (), accessory: Any = None, block_id: str | None = None) -> SectionBlock:
    """A mrkdwn section; ``text`` must already be escaped. Up to 10 ``fields`` of mrkdwn."""
    return SectionBlock(
        text=MarkdownTextObject(text=cut(text, SECTION_TEXT_MAX)) if text else None,
        fields=[MarkdownTextObject(text=cut(f, FIELD_TEXT_MAX)) for f in fields[:SECTION_FIELDS_MAX]] or None,
        accessory=accessory,
        block_id=block_id,
    )


def fields(pairs: Iterable[tuple[str, str]]) -> list[SectionBlock]:
    """``(label, value)`` pairs (already escaped) as sections of at most 10 fields: ``*label*\\nvalue``."""
    items = [f"*{label}*\n{value}" for label, value in pairs]
    return [section("", fields=items[i : i + SECTION_FIELDS_MAX]) for i in range(0, len(items), SECTION_FIELDS_MAX)]


def context(*texts: str) -> ContextBlock:
    """A context block of mrkdwn elements (already escaped), at most 10."""
    return ContextBlock(elements=[MarkdownTextObject(text=cut(t, FIELD_TEXT_MAX)) for t in texts[:CONTEXT_ELEMENTS_MAX] if t])


def divider() -> DividerBlock:
    return DividerBlock()


def button(text: str, action_id: str, value: str = "", *, style: str | None = None) -> ButtonElement:
    """A button; ``text`` plain, ``value`` at most 2000 characters (longer raises ``ValueError``)."""
    if len(value) > BUTTON_VALUE_MAX:
        raise ValueError(f"button value longer than {BUTTON_VALUE_MAX} characters")
    return ButtonElement(
        text=PlainTextObject(text=cut(plain(text), BUTTON_TEXT_MAX)), action_id=action_id, value=value or None, style=style
    )


def actions(*elements: Any, block_id: str | None = None) -> ActionsBlock:
    return ActionsBlock(elements=list(elements), block_id=block_id)


def bullet_list(lines: Sequence[str], *, limit: int = SECTION_TEXT_MAX, more: str = "and {n} more") -> str:
    """Lines (already escaped) joined as a bullet list that fits ``limit`` characters; what does not
    fit becomes a last line "and N more"."""
    out: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        entry = f"\u2022 {line}"
        rest = len(lines) - index
        tail = len(more.format(n=rest)) + 4
        if used + len(entry) + 1 + (tail if rest > 1 else 0) > limit:
            out.append("_" + more.format(n=rest) + "_")
            break
        out.append(entry)
        used += len(entry) + 1
    return "\n".join(out)


def message(blocks: Sequence[Block | dict], text: str, *, more_label: str = "and {n} more not shown") -> Payload:
    """The payload ``{"text", "blocks"}``: ``text`` is the fallback (notifications, screen readers);
    at most 50 blocks, the last one a context "and N more" when some had to be dropped."""
    rendered = [b.to_dict() if isinstance(b, Block) else dict(b) for b in blocks]
    if len(rendered) > MAX_BLOCKS:
        dropped = len(rendered) - (MAX_BLOCKS - 1)
        rendered = [*rendered[: MAX_BLOCKS - 1], context(more_label.format(n=dropped)).to_dict()]
    return {"text": cut(text or " ", FALLBACK_TEXT_MAX), "blocks": rendered}


def message_link(channel: str, ts: str | None, *, team_domain: str | None = None) -> str | None:
    """A link to message ``ts`` in ``channel`` (Slack's archive URL form: ``p`` + the ts without its
    dot), on the workspace's own host when its domain is known (a request's ``team_domain``), else on
    ``slack.com``, which opens it in the reader's workspace. ``None`` without a ts."""
    if not ts:
        return None
    host = f"{team_domain}.slack.com" if team_domain else "slack.com"
    return f"https://{host}/archives/{channel}/p{ts.replace('.', '')}"


def number(value: float | int | None, *, compact: bool = False) -> str:
    """A count for people: ``1,234,567``, or with ``compact`` ``1.23M`` / ``45.6K``; ``None`` -> ``n/a``."""
    if value is None:
        return "n/a"
    if compact:
        for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
            if abs(value) >= size:
                scaled = value / size
                digits = 2 if abs(scaled) < 10 else 1 if abs(scaled) < 100 else 0
                return f"{scaled:.{digits}f}{suffix}"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


NOT_REPORTED = "not reported"
"""A figure the Agent API left out of every day's row (absent or null): said, never shown as 0."""
DAYS_REPORTED = "({reported} of {days} days reported)"
"""After a sum or average taken over only the days whose rows reported the figure."""


def figure(
    value: float | int | None,
    show: Callable[[float], str] = number,
    *,
    reported: int | None = None,
    days: int | None = None,
    unit: str = "",
) -> str:
    """A figure of several days for people, the one way usage, digest and chart texts say gaps.

    ``show`` formats the value (default :func:`number`; ``lambda v: number(v, compact=True)``...).
    ``None`` (no day reported it) -> :data:`NOT_REPORTED`. When only ``reported`` of ``days`` days
    reported it, the value is the sum (or average) of those days, followed by
    :data:`DAYS_REPORTED`: ``"12.3M (5 of 7 days reported)"``. Without ``reported``/``days``, or
    when every day reported it, the value alone. ``unit`` (our own copy, for running text such as
    fallback text) goes after the value: ``"12,345 billable tokens (5 of 7 days reported)"``,
    ``"billable tokens not reported"``."""
    if value is None:
        return f"{unit} {NOT_REPORTED}" if unit else NOT_REPORTED
    text = f"{show(value)} {unit}" if unit else show(value)
    if reported is not None and days is not None and reported < days:
        return f"{text} {DAYS_REPORTED.format(reported=reported, days=days)}"
    return text


def change(current: float | int | None, previous: float | int | None) -> str:
    """The change from ``previous`` to ``current`` as ``▲ 12.3%``, ``▼ 4.0%``, ``no change``, or
    ``new`` when the previous value was zero; empty when either is missing. From a small base (the
    current value :data:`SMALL_BASE_FACTOR` times the previous or more) a percentage would read as
    noise ("▲ 10981.0%"): it is said as a factor, ``▲ \u00d7111, from a small base``."""
    if current is None or previous is None:
        return ""
    if previous == 0:
        return "new" if current else "no change"
    if previous > 0 and current >= previous * SMALL_BASE_FACTOR:
        return f"{UP} \u00d7{current / previous:,.0f}, from a small base"
    pct = (current - previous) / previous * 100
    if abs(pct) < 0.05:
        return "no change"
    arrow = UP if pct > 0 else DOWN
    return f"{arrow} {abs(pct):.1f}%"


SMALL_BASE_FACTOR = 10
"""From this many times the previous value up, a change is said as a factor, not a percentage."""


AS_OF = "As of {day}; the platform is not answering."
"""Said while the platform does not answer and stored days stand in (issue #30): the last stored day read."""
DAYS_NOT_HAD = "Not included: {days} (the platform did not give {them})."
"""The days a reply, digest, alert or Home could not have (:func:`day_runs`)."""


def day_runs(days: Sequence[dt.date]) -> str:
    """Days as short runs: ``2026-11-01 \u2013 2026-11-03, 2026-11-05``."""
    runs: list[tuple[dt.date, dt.date]] = []
    for day in sorted(days):
        if runs and runs[-1][1] + dt.timedelta(days=1) == day:
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    return ", ".join(a.isoformat() if a == b else f"{a.isoformat()} \u2013 {b.isoformat()}" for a, b in runs)


def gaps_note(missing: Sequence[dt.date], *, outage: bool, as_of: dt.date | None) -> str:
    """The one way every usage reader says which days it could not have (issue #30, the store of
    landed days): during an outage :data:`AS_OF` (when a stored day stood in), then
    :data:`DAYS_NOT_HAD` with the ``missing`` days as runs; ``""`` when nothing is missing (a
    complete answer says nothing about the store). Our own copy: no escaping needed."""
    lines = []
    if outage and as_of is not None:
        lines.append(AS_OF.format(day=as_of.isoformat()))
    if missing:
        lines.append(DAYS_NOT_HAD.format(days=day_runs(missing), them="it" if len(missing) == 1 else "them"))
    return " ".join(lines)
