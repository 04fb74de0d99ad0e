"""Small Block Kit helpers every formatter composes; built on ``slack_sdk.models.blocks``.

The helpers respect Slack's limits (https://docs.slack.dev/reference/block-kit/blocks), taking the
numbers from slack_sdk's models where it carries them: section text 3000 characters, 10 fields of
2000, header 150 (plain text), 10 context elements, 25 actions elements, 50 blocks a message.
Text that would not fit is cut with an ellipsis instead of failing at Slack.

Every string that came from the Agent API or from a user must pass through :func:`esc` before it
goes into mrkdwn, so that ``<!channel>`` or ``<https://evil|click>`` shows as text, never as a
ping or a link (Slack doc "Formatting text for app surfaces", escaping).

:func:`message` is the one way a formatter returns a payload: ``{"text": fallback, "blocks": [...]}``,
at most :data:`MAX_BLOCKS` blocks, with a context line "and N more" when blocks had to be dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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


def esc(value: object) -> str:
    """Escape ``&``, ``<`` and ``>`` of an API or user string for mrkdwn (``None`` -> ``""``)."""
    if value is None:
        return ""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


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
    return HeaderBlock(text=PlainTextObject(text=cut(text or " ", HEADER_TEXT_MAX), emoji=True))


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
    return ButtonElement(text=PlainTextObject(text=cut(text, BUTTON_TEXT_MAX)), action_id=action_id, value=value or None, style=style)


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
        rendered = rendered[: MAX_BLOCKS - 1] + [context(more_label.format(n=dropped)).to_dict()]
    return {"text": cut(text or " ", FALLBACK_TEXT_MAX), "blocks": rendered}


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


def change(current: float | int | None, previous: float | int | None) -> str:
    """The change from ``previous`` to ``current`` as ``▲ 12.3%``, ``▼ 4.0%``, ``no change``, or
    ``new`` when the previous value was zero; empty when either is missing."""
    if current is None or previous is None:
        return ""
    if previous == 0:
        return "new" if current else "no change"
    pct = (current - previous) / previous * 100
    if abs(pct) < 0.05:
        return "no change"
    arrow = UP if pct > 0 else DOWN
    return f"{arrow} {abs(pct):.1f}%"
