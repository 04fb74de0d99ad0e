"""Block Kit as readable plain text, for the demo's transcript and for test failure messages.

    render_text({"text": "...", "blocks": [...]})  ->  str

Blocks rendered (Slack docs: https://api.slack.com/reference/block-kit/blocks):

- header: the text, underlined with ``=``;
- section: its text, then each field on a line (``*Label*`` newline value reads ``Label: value``),
  then a button accessory as ``[Label]``;
- context: its texts on one line, joined by ``" | "``;
- divider: a line of ``-``;
- actions: buttons as ``[Label]``, menus as ``[Placeholder v]``, overflow menus as ``[...]``;
- image: ``[image: alt text] (url)``, after its title if any;
- rich_text: sections, bullet and numbered lists, preformatted text (indented), quotes (``> ``);
- table: one line per row, cells joined by ``" | "`` in aligned columns;
- input: ``Label: [...]``; any other block: ``[<type>]``.

mrkdwn (https://api.slack.com/reference/surfaces/formatting) is softened: ``<url|text>`` becomes
``text (url)``, ``<@U1>`` ``@name`` (names from ``users`` when given), ``<#C1|name>`` ``#name``,
``<!here>`` ``@here``, ``<!subteam^S1|@team>`` ``@team``, ``<!date^...|fallback>`` the fallback;
``*bold*`` loses its stars and ``_italic_`` its underscores (``snake_case`` words stay); ``&amp;``
``&lt;`` ``&gt;`` are unescaped last. A message without blocks
renders its ``text``; attachments render after the blocks, indented with ``| ``; shared files as
``[file: title]``. ``~strike~``, colours and emoji codes are kept as they are.

What a person can do with a message or a modal, for the interactive demo (a text stand-in for
Slack's client): :func:`choices` lists the buttons and menu options of a message (what a click
sends), :func:`menu_lines` shows each menu's options as a line, :func:`form_fields` reads a modal's
``input`` blocks and :func:`render_modal` shows the modal as a form with its field names and the
values filled so far (Slack docs: https://api.slack.com/reference/block-kit/block-elements,
https://api.slack.com/reference/surfaces/views).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

DIVIDER = "-" * 40

_ANGLE = re.compile(r"<([^<>]+)>")
_BOLD = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")


def render_text(
    message: Mapping[str, Any],
    *,
    users: Mapping[str, str] | None = None,
    channels: Mapping[str, str] | None = None,
) -> str:
    """``message`` (a dict with ``text`` and/or ``blocks``, ``attachments``, ``files``) as text.

    ``users`` / ``channels`` map IDs to names for mentions.
    """
    renderer = _Renderer(users or {}, channels or {})
    parts = []
    if message.get("blocks"):
        parts.append(renderer.blocks(message["blocks"]))
    elif message.get("text"):
        parts.append(renderer.mrkdwn(message["text"]))
    for attachment in message.get("attachments") or []:
        inner = (
            renderer.blocks(attachment["blocks"])
            if attachment.get("blocks")
            else renderer.mrkdwn(attachment.get("text") or attachment.get("fallback") or "")
        )
        parts.append("\n".join(f"| {line}" for line in inner.splitlines()))
    for file in message.get("files") or []:
        parts.append(f"[file: {file.get('title') or file.get('name') or file.get('id')}]")
    return "\n".join(part for part in parts if part)


TASK_MARKS = {"pending": "( )", "in_progress": "(…)", "complete": "(✓)", "error": "(✗)"}


def render_stream(stream: Mapping[str, Any], *, users: Mapping[str, str] | None = None) -> str:
    """A streamed message (:attr:`.recorder.Message.stream`) as text: its plan, then its text and
    tasks in the order they came (each task in its last state, with its output), then the closing
    blocks; ``(still streaming)`` while it grows."""
    renderer = _Renderer(users or {}, {})
    lines: list[str] = []
    if stream.get("plan"):
        lines.append(f"Plan: {stream['plan']}" if not str(stream["plan"]).lower().startswith("plan") else str(stream["plan"]))
    tasks = {str(task["id"]): task for task in stream.get("tasks") or []}
    seen: set[str] = set()
    text = ""
    for chunk in stream.get("chunks") or []:
        if chunk.get("type") == "markdown_text":
            text += str(chunk.get("text") or "")
            continue
        if text.strip():
            lines.append(text.strip())
        text = ""
        if chunk.get("type") == "task_update" and str(chunk["id"]) not in seen:
            seen.add(str(chunk["id"]))
            task = tasks.get(str(chunk["id"]), chunk)
            output = f" -> {' / '.join(str(task['output']).splitlines())}" if task.get("output") else ""
            lines.append(f"{TASK_MARKS.get(str(task.get('status')), '( )')} {renderer.mrkdwn(str(task.get('title') or ''))}{output}")
    if text.strip():
        lines.append(text.strip())
    if stream.get("state") == "streaming":
        lines.append("(still streaming)")
    if stream.get("closing_blocks"):
        lines.append(renderer.blocks(stream["closing_blocks"]))
    return "\n".join(lines)


def render_mrkdwn(text: str, *, users: Mapping[str, str] | None = None, channels: Mapping[str, str] | None = None) -> str:
    """One mrkdwn string as plain text (see the module docstring)."""
    return _Renderer(users or {}, channels or {}).mrkdwn(text)


class _Renderer:
    def __init__(self, users: Mapping[str, str], channels: Mapping[str, str]) -> None:
        self.users = users
        self.channels = channels
        self._blocks: dict[str, Callable[[dict[str, Any]], str]] = {
            "header": self._header,
            "section": self._section,
            "context": self._context,
            "divider": lambda block: DIVIDER,
            "actions": self._actions,
            "image": self._image,
            "rich_text": self._rich_text,
            "table": self._table,
            "input": self._input,
            "markdown": lambda block: str(block.get("text") or ""),
            "context_actions": self._context_actions,
        }

    def blocks(self, blocks: list[dict[str, Any]]) -> str:
        rendered = [self._blocks.get(block.get("type", ""), _unknown)(block) for block in blocks]
        return "\n".join(text for text in rendered if text)

    # ----------------------------------------------------------------- text

    def mrkdwn(self, text: str) -> str:
        text = _ANGLE.sub(lambda match: self._angle(match.group(1)), text)
        text = _BOLD.sub(r"\1", text)
        text = _ITALIC.sub(r"\1", text)
        return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")

    def _angle(self, inner: str) -> str:
        target, _, label = inner.partition("|")
        if target.startswith("@"):
            return "@" + (label or self.users.get(target[1:], target[1:]))
        if target.startswith("#"):
            return "#" + (label or self.channels.get(target[1:], target[1:]))
        if target.startswith("!subteam^"):
            return label or "@" + target.removeprefix("!subteam^")
        if target.startswith("!date^"):
            return label or target
        if target.startswith("!"):
            return "@" + target[1:]
        address = target.removeprefix("mailto:")
        return f"{label} ({address})" if label and label != address else address

    def text_object(self, obj: Any) -> str:
        if isinstance(obj, str):
            return obj
        if not isinstance(obj, dict):
            return ""
        text = obj.get("text", "")
        return self.mrkdwn(text) if obj.get("type") == "mrkdwn" else text

    # ----------------------------------------------------------------- blocks

    def _header(self, block: dict[str, Any]) -> str:
        text = self.text_object(block.get("text"))
        return f"{text}\n{'=' * len(text)}"

    def _section(self, block: dict[str, Any]) -> str:
        lines = []
        if block.get("text"):
            lines.append(self.text_object(block["text"]))
        lines.extend(_field_line(self.text_object(field)) for field in block.get("fields") or [])
        accessory = self._element(block.get("accessory"))
        if accessory:
            lines.append(accessory)
        return "\n".join(lines)

    def _context(self, block: dict[str, Any]) -> str:
        texts = [self.text_object(e) if e.get("type") != "image" else "" for e in block.get("elements") or []]
        return " | ".join(text for text in texts if text)

    def _context_actions(self, block: dict[str, Any]) -> str:
        """Feedback buttons (and icon buttons) as ``[👍 Good answer] [👎 Bad answer]``."""
        shown = []
        for element in block.get("elements") or []:
            if element.get("type") == "feedback_buttons":
                for mark, side in (("\U0001f44d", "positive_button"), ("\U0001f44e", "negative_button")):
                    if element.get(side):
                        shown.append(f"[{mark} {self.text_object(element[side].get('text'))}]")
            else:
                shown.append(self._element(element))
        return " ".join(part for part in shown if part)

    def _actions(self, block: dict[str, Any]) -> str:
        return " ".join(filter(None, (self._element(e) for e in block.get("elements") or [])))

    def _element(self, element: Any) -> str:
        if not isinstance(element, dict):
            return ""
        kind = element.get("type", "")
        if kind == "button":
            return f"[{self.text_object(element.get('text'))}]"
        if kind == "image":
            return ""
        if kind == "overflow":
            return "[...]"
        label = self.text_object(element.get("placeholder") or element.get("initial_option", {}).get("text"))
        return f"[{label or kind} v]"

    def _image(self, block: dict[str, Any]) -> str:
        title = self.text_object(block.get("title"))
        alt = block.get("alt_text", "")
        url = block.get("image_url") or block.get("slack_file", {}).get("url", "")
        prefix = f"{title}\n" if title else ""
        return f"{prefix}[image: {alt}]" + (f" ({url})" if url else "")

    def _input(self, block: dict[str, Any]) -> str:
        return f"{self.text_object(block.get('label'))}: [...]"

    def _table(self, block: dict[str, Any]) -> str:
        rows = [[self._cell(cell) for cell in row] for row in block.get("rows") or []]
        if not rows:
            return ""
        widths = [max(len(row[i]) if i < len(row) else 0 for row in rows) for i in range(max(map(len, rows)))]
        return "\n".join(" | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip() for row in rows)

    def _cell(self, cell: Any) -> str:
        if isinstance(cell, dict) and cell.get("type") == "rich_text":
            return self._rich_text(cell).replace("\n", " ")
        return self.text_object(cell)

    # ----------------------------------------------------------------- rich text

    def _rich_text(self, block: dict[str, Any]) -> str:
        return "\n".join(self._rich_element(element) for element in block.get("elements") or [])

    def _rich_element(self, element: dict[str, Any]) -> str:
        kind = element.get("type")
        if kind == "rich_text_list":
            indent = "  " * int(element.get("indent", 0))
            ordered = element.get("style") == "ordered"
            return "\n".join(
                f"{indent}{f'{number}.' if ordered else '-'} {self._inline(item.get('elements') or [])}"
                for number, item in enumerate(element.get("elements") or [], start=1)
            )
        text = self._inline(element.get("elements") or [])
        if kind == "rich_text_preformatted":
            return "\n".join(f"    {line}" for line in text.splitlines())
        if kind == "rich_text_quote":
            return "\n".join(f"> {line}" for line in text.splitlines())
        return text

    def _inline(self, elements: list[dict[str, Any]]) -> str:
        return "".join(self._inline_one(element) for element in elements)

    def _inline_one(self, element: dict[str, Any]) -> str:
        kind = element.get("type")
        if kind == "text":
            return element.get("text", "")
        if kind == "link":
            text, url = element.get("text"), element.get("url", "")
            return f"{text} ({url})" if text and text != url else url
        if kind == "user":
            return "@" + self.users.get(element.get("user_id", ""), element.get("user_id", ""))
        if kind == "channel":
            return "#" + self.channels.get(element.get("channel_id", ""), element.get("channel_id", ""))
        if kind == "usergroup":
            return "@" + element.get("usergroup_id", "")
        if kind == "broadcast":
            return "@" + element.get("range", "")
        if kind == "emoji":
            return f":{element.get('name', '')}:"
        return element.get("text", "")


def _field_line(text: str) -> str:
    """A section field: ``Label\\nvalue`` (after bold was stripped) reads ``Label: value``."""
    label, newline, value = text.partition("\n")
    return f"{label.rstrip().rstrip(':')}: {value.strip()}" if newline and value.strip() else text


def _unknown(block: dict[str, Any]) -> str:
    return f"[{block.get('type', 'block')}]"


# --------------------------------------------------------------------- what a person can act on

MENU_TYPES = frozenset({"static_select", "overflow", "radio_buttons"})
"""Elements whose options :func:`choices` lists (one choice per option, single selection)."""
TEXT_INPUTS = frozenset({"plain_text_input", "email_text_input", "url_text_input", "number_input"})
SINGLE_SELECTS = frozenset({"static_select", "radio_buttons"})


@dataclass(frozen=True)
class Choice:
    """Something a person can click in a message: a button (``menu`` None) or one option of a menu
    (``menu`` is the menu's placeholder). ``value`` is what the click sends (the button's ``value``
    or the option's)."""

    label: str
    action_id: str
    block_id: str | None
    value: str | None
    menu: str | None = None


def choices(message: Mapping[str, Any]) -> list[Choice]:
    """Every button and menu option of ``message``'s blocks (section accessories and ``actions``
    elements), in the order they show."""
    renderer = _Renderer({}, {})
    found: list[Choice] = []
    for block in message.get("blocks") or []:
        elements = [*(block.get("elements") or []), block.get("accessory")] if block.get("type") in ("actions", "section") else []
        for element in elements:
            if not isinstance(element, dict) or not element.get("action_id"):
                continue
            kind = element.get("type")
            if kind == "button":
                label = renderer.text_object(element.get("text"))
                found.append(Choice(label, element["action_id"], block.get("block_id"), element.get("value")))
            elif kind in MENU_TYPES:
                menu = renderer.text_object(element.get("placeholder")) or kind
                found.extend(
                    Choice(renderer.text_object(option.get("text")), element["action_id"], block.get("block_id"), option.get("value"), menu)
                    for option in _options(element)
                )
    return found


def menu_lines(message: Mapping[str, Any]) -> list[str]:
    """One line per menu of ``message``: ``"<placeholder>: <option> | <option>"``."""
    menus: dict[tuple[str, str | None], list[str]] = {}
    for choice in choices(message):
        if choice.menu is not None:
            menus.setdefault((choice.menu, choice.block_id), []).append(choice.label)
    return [f"{menu}: {' | '.join(labels)}" for (menu, _), labels in menus.items()]


@dataclass(frozen=True)
class FormField:
    """One ``input`` block of a modal: its ``block_id`` (the name a person fills it by), the
    element's ``action_id`` and ``type``, the label, whether it is optional or multi-line, the
    options of a select as ``(label, value)`` and the initial value (an option's value for a select)."""

    block_id: str
    action_id: str
    kind: str
    label: str
    optional: bool = False
    multiline: bool = False
    options: tuple[tuple[str, str], ...] = ()
    initial: str | None = None

    @property
    def fillable(self) -> bool:
        """Whether the demo can fill it: a text input or a single-choice menu."""
        return self.kind in TEXT_INPUTS or self.kind in SINGLE_SELECTS

    def label_of(self, value: str) -> str:
        """The option label of ``value`` for a select, else ``value`` itself."""
        return next((label for label, option in self.options if option == value), value)


def form_fields(view: Mapping[str, Any]) -> list[FormField]:
    """The ``input`` blocks of modal ``view``, in order."""
    renderer = _Renderer({}, {})
    fields: list[FormField] = []
    for block in view.get("blocks") or []:
        element = block.get("element") or {}
        if block.get("type") != "input" or not isinstance(element, dict):
            continue
        options = tuple((renderer.text_object(o.get("text")), str(o.get("value") or "")) for o in _options(element))
        initial = (element.get("initial_option") or {}).get("value") or element.get("initial_value")
        fields.append(
            FormField(
                block_id=str(block.get("block_id") or ""),
                action_id=str(element.get("action_id") or ""),
                kind=str(element.get("type") or ""),
                label=renderer.text_object(block.get("label")),
                optional=bool(block.get("optional")),
                multiline=bool(element.get("multiline")),
                options=options,
                initial=str(initial) if initial is not None else None,
            )
        )
    return fields


def render_modal(view: Mapping[str, Any], values: Mapping[str, str] | None = None) -> str:
    """Modal ``view`` as a form: its title, every block (an ``input`` as ``<block_id>: <label>``
    with ``(optional)``, ``(several lines)``, the options of a menu and ``= <value>`` once filled;
    ``values`` maps block IDs to values, else the initial ones show), and its buttons."""
    renderer = _Renderer({}, {})
    values = values or {}
    fields = {field.block_id: field for field in form_fields(view)}
    title = renderer.text_object(view.get("title")) or "form"
    lines = [f"{title} (a form)", "=" * (len(title) + 9)]
    for block in view.get("blocks") or []:
        field = fields.get(str(block.get("block_id") or "")) if block.get("type") == "input" else None
        if field is None:
            lines.append(renderer.blocks([block]))
            continue
        notes = [note for note, on in (("optional", field.optional), ("several lines", field.multiline)) if on]
        if not field.fillable:
            notes.append(f"a {field.kind}, which the demo cannot fill")
        line = f"{field.block_id}: {field.label}" + (f" ({', '.join(notes)})" if notes else "")
        if field.options:
            line += f"; one of: {' | '.join(label for label, _ in field.options)}"
        value = values.get(field.block_id, field.initial)
        if value is not None:
            line += f" = {field.label_of(value)}"
        lines.append(line)
    buttons = [renderer.text_object(view.get(key)) for key in ("submit", "close") if view.get(key)]
    if buttons:
        lines.append(" ".join(f"[{label}]" for label in buttons))
    return "\n".join(line for line in lines if line)


def _options(element: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A menu's options, those of its option groups included."""
    options = list(element.get("options") or [])
    for group in element.get("option_groups") or []:
        options.extend(group.get("options") or [])
    return [option for option in options if isinstance(option, dict)]
