"""The Block Kit limits the emulated Web API enforces, so a bot that breaks them fails in tests too.

Slack answers a message with bad blocks ``{"ok": false, "error": "invalid_blocks",
"response_metadata": {"messages": ["[ERROR] ... [json-pointer:/blocks/0/text/text]"]}}``; so does
the emulator, for the limits below (Slack docs: "Block Kit" -> "Blocks" reference pages, each
block's "Fields" table). Only lengths and counts are checked here; the full shape of every block is
the job of ``shared/slack/block-kit.schema.json`` in the formatter tests.
"""

from __future__ import annotations

from typing import Any

MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
MAX_MODAL_TITLE = 24
MAX_MESSAGE_TEXT = 40_000
MAX_BLOCK_ID = 255

# block type -> ((json path inside the block, max length), ...) for text objects and strings
_TEXT_LIMITS: dict[str, tuple[tuple[tuple[str, ...], int], ...]] = {
    "section": ((("text", "text"), 3000),),
    "header": ((("text", "text"), 150),),
    "image": ((("alt_text",), 2000), (("title", "text"), 2000)),
}
# block type -> (list field, max items, max length of each item's "text")
_LIST_LIMITS: dict[str, tuple[str, int, int | None]] = {
    "section": ("fields", 10, 2000),
    "context": ("elements", 10, None),
    "actions": ("elements", 25, None),
}
_BUTTON_TEXT = 75
_BUTTON_VALUE = 2000
_ACTION_ID = 255


def block_errors(blocks: Any, *, max_blocks: int = MAX_MESSAGE_BLOCKS) -> list[str]:
    """Slack-style ``[ERROR] ...`` messages for every limit ``blocks`` breaks (empty when fine)."""
    if not isinstance(blocks, list):
        return ["[ERROR] must be an array [json-pointer:/blocks]"]
    errors = []
    if len(blocks) > max_blocks:
        errors.append(f"[ERROR] no more than {max_blocks} items allowed [json-pointer:/blocks]")
    for index, block in enumerate(blocks):
        errors.extend(_one_block_errors(block, f"/blocks/{index}"))
    return errors


def _one_block_errors(block: Any, pointer: str) -> list[str]:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return [f"[ERROR] missing required field: type [json-pointer:{pointer}]"]
    kind = block["type"]
    errors = []
    if len(str(block.get("block_id", ""))) > MAX_BLOCK_ID:
        errors.append(_too_long(MAX_BLOCK_ID, f"{pointer}/block_id"))
    for path, limit in _TEXT_LIMITS.get(kind, ()):
        value = _dig(block, path)
        if isinstance(value, str) and len(value) > limit:
            errors.append(_too_long(limit, pointer + "/" + "/".join(path)))
    if kind in _LIST_LIMITS:
        field, max_items, item_text_limit = _LIST_LIMITS[kind]
        items = block.get(field) or []
        if len(items) > max_items:
            errors.append(f"[ERROR] no more than {max_items} items allowed [json-pointer:{pointer}/{field}]")
        for index, item in enumerate(items):
            item_pointer = f"{pointer}/{field}/{index}"
            text = item.get("text") if isinstance(item, dict) else None
            if item_text_limit and isinstance(text, str) and len(text) > item_text_limit:
                errors.append(_too_long(item_text_limit, f"{item_pointer}/text"))
            errors.extend(_element_errors(item, item_pointer))
    errors.extend(_element_errors(block.get("accessory"), f"{pointer}/accessory"))
    return errors


def _element_errors(element: Any, pointer: str) -> list[str]:
    if not isinstance(element, dict) or element.get("type") != "button":
        return []
    checks = (
        (("text", "text"), _BUTTON_TEXT),
        (("value",), _BUTTON_VALUE),
        (("action_id",), _ACTION_ID),
    )
    return [
        _too_long(limit, pointer + "/" + "/".join(path))
        for path, limit in checks
        if isinstance(value := _dig(element, path), str) and len(value) > limit
    ]


def _dig(data: dict, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _too_long(limit: int, pointer: str) -> str:
    return f"[ERROR] must be less than {limit + 1} characters [json-pointer:{pointer}]"
