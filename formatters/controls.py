"""Block Kit for ``/agent controls``: one revision with its summary, the history, a diff.

Input: :class:`bot.services.controls.ControlsOverview`, :class:`bot.services.controls.ControlsHistory`,
:class:`bot.services.controls.ControlsDiff` (public values only: secrets arrive as a flag, never as a value),
and ``today`` (a date, for "2 days ago"). Output: ``{"text", "blocks"}`` (see
:func:`formatters.blocks.message`).

A change is one line: ``path``: ``old`` → ``new``; values are compact JSON, escaped, cut to
:data:`VALUE_MAX` characters; a secret reads ``changed (redacted)``. Lines are packed into sections
(at most :data:`LINES_PER_SECTION` lines, 3000 characters); when they would not fit in Slack's 50
blocks, the last block says how many changes (or revisions) are not shown.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from bot.services.controls import (
    ChangeKind,
    ControlsDiff,
    ControlsHistory,
    ControlsOverview,
    RevisionChanges,
    RevisionInfo,
    SettingChange,
    SettingsSummary,
)
from formatters.blocks import (
    MAX_BLOCKS,
    SECTION_TEXT_MAX,
    Payload,
    context,
    cut,
    divider,
    esc,
    esc_text,
    fields,
    header,
    message,
    section,
)

OVERVIEW_TITLE = "Enterprise controls: revision {revision}"
HISTORY_TITLE = "Enterprise controls: the last {revisions}"
HISTORY_TITLE_ALL = "Enterprise controls: all {revisions}"
DIFF_TITLE = "Enterprise controls: revision {old} \u2192 {new}"
CHANGED_BY = "Changed by {author} \u00b7 {when}"
CHANGES_FROM = "*What changed from revision {previous}* ({count})"
FIRST_REVISION = "Revision {revision} is the first one; there is nothing to compare it with."
NO_CHANGES = "No setting changed."
CHANGE_COUNT = "*{count} changed {noun}*"
MORE_CHANGES = "and {n} more changes not shown; `/agent controls diff` two revisions closer together shows fewer"
MORE_REVISIONS = "and {n} more revisions not shown; ask for fewer with `/agent controls history <n>`"
OVERVIEW_HINT = "`/agent controls history [n]` lists earlier revisions \u00b7 `/agent controls diff <a> <b>` compares any two"
HISTORY_HINT = "`/agent controls diff <a> <b>` shows the values that changed between any two revisions"
NO_HISTORY = "The organization has no enterprise-control changes yet."
NO_HISTORY_HINT = "Changes made in the platform's enterprise controls show up here."
UNKNOWN_REVISION = "There is no revision {missing}."
AVAILABLE_REVISIONS = "Available: revisions {low} to {high} ({count} in all)."
SECRET = "(redacted)"
UNKNOWN_AUTHOR = "unknown"
NOT_SET = "not set"
UNKNOWN_TIME = "unknown time"
DATE_MAX = 40

VALUE_MAX = 120
PATH_MAX = 150
ITEMS_SHOWN = 5
PATHS_PER_REVISION = 8
LINES_PER_SECTION = 10

_SUMMARY_LABELS = (
    "Session defaults",
    "Maximum autonomy",
    "Model policy",
    "MCP policy",
    "Sandbox",
    "Network policy",
    "Computers",
    "Session retention",
)


# ---- values ----------------------------------------------------------------------------------


def compact(value: Any) -> str:
    """A JSON value as compact JSON (``"text"``, ``12``, ``true``, ``{"a":1}``), not escaped."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _code(text: str, limit: int = VALUE_MAX) -> str:
    """``text`` escaped, cut, as a code span (a backtick inside would end it, so it is replaced)."""
    return "`" + cut(esc(text), limit) + "`"


def _value(value: Any, people: Mapping[str, str] | None = None) -> str:
    """A setting's value as a person reads it: yes/no, "not set", numbers and words as text, an
    organization user ID as the person's name when ``people`` has it; a list or object as compact
    JSON in a code span (cut), its user IDs named the same way."""
    if people and isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return _items(value, people)
    if people and isinstance(value, str) and value in people:
        return esc(people[value])
    if value is None:
        return NOT_SET
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:,}"
    if isinstance(value, str) and value.strip() and len(value) <= VALUE_MAX and "\n" not in value:
        return esc(value)
    if isinstance(value, dict):
        return _object(value)
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return _items(value, people)
    return _code(compact(value))


OBJECT_NAMES: Final = ("displayName", "name", "title", "model", "id")
"""The members that name an object (a custom model, a server), first found first."""
OBJECT_SETTINGS: Final = "{n} setting{s}: {keys}"
OBJECT_KEYS_SHOWN = 4


def _object(value: dict[str, Any]) -> str:
    """An object in words: what names it and its ``id`` (``Acme Coder 70B (`custom:acme-0`)``), else
    how many settings it has and the first of them in words; never raw JSON cut mid-key."""
    name = next((value[k] for k in OBJECT_NAMES if isinstance(value.get(k), str) and value[k].strip()), None)
    if name is not None:
        ident = value.get("id")
        shown = cut(esc(name), VALUE_MAX)
        return f"{shown} ({_code(ident)})" if isinstance(ident, str) and ident and ident != name else shown
    keys = [setting_label(str(k)).lower() for k in list(value)[:OBJECT_KEYS_SHOWN]]
    more = f" +{len(value) - OBJECT_KEYS_SHOWN} more" if len(value) > OBJECT_KEYS_SHOWN else ""
    if not value:
        return "an empty object"
    return OBJECT_SETTINGS.format(n=len(value), s="" if len(value) == 1 else "s", keys=", ".join(keys) + more)


_ACRONYMS: Final = {
    "mcp": "MCP",
    "byom": "BYOM",
    "ip": "IP",
    "ips": "IPs",
    "url": "URL",
    "urls": "URLs",
    "id": "ID",
    "ids": "IDs",
    "llm": "LLM",
}
_WORDS = re.compile(r"[A-Z]{2,}s?(?![a-z])|[A-Z]?[a-z0-9]+|[A-Z]+")
_INDEX = re.compile(r"\[(\d+)\]")
_KEY = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def setting_label(path: str) -> str:
    """A setting's dotted path in words (escaped), for people: ``sessionRetentionDays`` ->
    ``Session retention days``, ``missionPolicy.restrictedAccess`` -> ``Mission policy \u203a
    restricted access``, ``customModels[1]`` -> ``Custom models #2``; map keys (``mcpAutonomyOverrides.github``)
    keep their own spelling."""
    parts = []
    for n, segment in enumerate(path.split(".")):
        index = _INDEX.search(segment)
        name = _INDEX.sub("", segment)
        words = [_ACRONYMS.get(w.lower(), w.lower()) for w in _WORDS.findall(name)]
        text = " ".join(words) if _KEY.match(name) else name  # a header name or map key stays as written
        if n == 0 and text:
            text = text[0].upper() + text[1:]
        if index:
            text += f" #{int(index.group(1)) + 1}"
        parts.append(text)
    return cut(esc(" \u203a ".join(parts)), PATH_MAX)


def _items(values: Sequence[Any], people: Mapping[str, str] | None = None) -> str:
    shown = ", ".join(_value(v, people) for v in values[:ITEMS_SHOWN])
    return shown + (f" +{len(values) - ITEMS_SHOWN} more" if len(values) > ITEMS_SHOWN else "")


def change_line(change: SettingChange, people: Mapping[str, str] | None = None) -> str:
    """One change as escaped mrkdwn: the setting in words (:func:`setting_label`): what happened
    (see the module docstring); organization user IDs named by ``people`` (ID -> name)."""
    path = f"*{setting_label(change.path)}*"
    if change.secret:
        return f"{path}: {change.kind.value} {SECRET}"
    if change.kind is ChangeKind.ADDED:
        return f"{path}: added {_value(change.new, people)}"
    if change.kind is ChangeKind.REMOVED:
        return f"{path}: removed (was {_value(change.old, people)})"
    if change.kind is ChangeKind.ITEMS:
        parts = []
        if change.added_items:
            parts.append(f"added {_items(change.added_items, people)}")
        if change.removed_items:
            parts.append(f"removed {_items(change.removed_items, people)}")
        return f"{path}: " + "; ".join(parts)
    if change.kind is ChangeKind.REORDERED:
        return f"{path}: same items, new order"
    line = f"{path}: {_value(change.old, people)} \u2192 {_value(change.new, people)}"
    if change.type_change:
        line += f" _({change.type_change[0]} \u2192 {change.type_change[1]})_"
    return line


def _author(info: RevisionInfo) -> str:
    if info.author_name and info.author_email:
        return f"{esc(info.author_name)} ({esc(info.author_email)})"
    return esc(info.author_name or info.author_email or UNKNOWN_AUTHOR)


def _day(info: RevisionInfo) -> str:
    if info.updated_at is None:
        return esc(cut(info.updated_at_text or UNKNOWN_TIME, DATE_MAX))
    return f"{info.updated_at:%Y-%m-%d}"


def _when(info: RevisionInfo, today: dt.date) -> str:
    """``2026-02-01 12:30 UTC (2 days ago)``; an instant that has no UTC form shows as sent."""
    moment = info.updated_at
    if moment is None:
        return _code(info.updated_at_text or UNKNOWN_TIME, DATE_MAX)
    stamp = moment.strftime("%Y-%m-%d %H:%M UTC")
    days = (today - moment.date()).days
    if days < 0:
        return stamp
    ago = "today" if days == 0 else "yesterday" if days == 1 else f"{days} days ago"
    return f"{stamp} ({ago})"


# ---- packing lines into blocks ---------------------------------------------------------------


def _pack(lines: Sequence[str], per_section: int = LINES_PER_SECTION) -> list[tuple[str, int]]:
    """Lines as section texts of at most ``per_section`` lines and 3000 characters: ``(text, lines)``."""
    packed: list[tuple[str, int]] = []
    chunk: list[str] = []
    size = 0
    for line in lines:
        line = cut(line, SECTION_TEXT_MAX)
        if chunk and (len(chunk) >= per_section or size + 1 + len(line) > SECTION_TEXT_MAX):
            packed.append(("\n".join(chunk), len(chunk)))
            chunk, size = [], 0
        chunk.append(line)
        size += len(line) + 1
    if chunk:
        packed.append(("\n".join(chunk), len(chunk)))
    return packed


def _capped(head: list, lines: Sequence[str], tail: list, more: str, per_section: int = LINES_PER_SECTION) -> list:
    """``head`` + sections of ``lines`` + ``tail``, within 50 blocks; dropped lines are counted in
    a context ``more`` (with ``{n}``) placed before ``tail``."""
    packed = _pack(lines, per_section)
    room = MAX_BLOCKS - len(head) - len(tail)
    if len(packed) <= room:
        return head + [section(text) for text, _ in packed] + tail
    kept = packed[: room - 1]
    dropped = len(lines) - sum(n for _, n in kept)
    return head + [section(text) for text, _ in kept] + [context(more.format(n=dropped))] + tail


# ---- the summary of a revision ---------------------------------------------------------------


def _on(value: bool | None, yes: str = "on", no: str = "off") -> str:
    return NOT_SET if value is None else yes if value else no


def _names(values: Sequence[str] | None, limit: int = ITEMS_SHOWN) -> str:
    if values is None:
        return NOT_SET
    if not values:
        return "none"
    shown = ", ".join(esc(v) for v in values[:limit])
    return shown + (f", +{len(values) - limit} more" if len(values) > limit else "")


def _emails(count: int | None) -> str:
    if count is None:
        return "allowed e-mails not set"
    return f"{count} allowed e-mail{'' if count == 1 else 's'}"


def summary_fields(summary: SettingsSummary) -> list[tuple[str, str]]:
    """The settings that matter as ``(label, escaped mrkdwn)`` pairs, in :data:`_SUMMARY_LABELS` order."""
    defaults = NOT_SET
    if summary.session_defaults:
        defaults = "\n".join(f"{setting_label(name)}: {_value(value)}" for name, value in summary.session_defaults)
    mp = summary.model_policy
    model_policy = "\n".join(
        [
            f"allowed: {_names(mp.allowed_model_ids)}",
            f"blocked: {_names(mp.blocked_model_ids)}",
            f"all service models: {_on(mp.allow_all_service_models, 'yes', 'no')} \u00b7 "
            f"fast models: {_on(mp.fast_models_allowed, 'yes', 'no')}",
            f"custom models: {_on(mp.allow_custom_models, 'allowed', 'not allowed')} \u00b7 {_names(mp.custom_models, 3)}",
            f"allowed base URLs: {_names(mp.allowed_base_urls, 3)}",
        ]
    )
    mcp = _on(summary.mcp_enabled)
    if summary.mcp_allowlist is not None:
        mcp += f" \u00b7 allowlist: {_names(summary.mcp_allowlist)}"
    sandbox = _on(summary.sandbox_enabled)
    if summary.sandbox_mode:
        sandbox += f" \u00b7 mode {esc(summary.sandbox_mode)}"
    sandbox += f"\nallowed domains: {_names(summary.sandbox_allowed_domains)}"
    computers = (
        f"managed: {_on(summary.managed_computers_enabled)} \u00b7 {_emails(summary.managed_computers_allowed_emails)}\n"
        f"BYOM: {_on(summary.byom_computers_enabled)} \u00b7 {_emails(summary.byom_computers_allowed_emails)}"
    )
    retention = NOT_SET if summary.retention_days is None else f"{summary.retention_days:,} days"
    values = (
        defaults,
        esc(summary.max_autonomy_level) if summary.max_autonomy_level else NOT_SET,
        model_policy,
        mcp,
        sandbox,
        f"allowed IPs: {_names(summary.network_allowed_ips)}",
        computers,
        retention,
    )
    return list(zip(_SUMMARY_LABELS, values, strict=True))


# ---- messages --------------------------------------------------------------------------------


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def controls_overview(overview: ControlsOverview, *, today: dt.date) -> Payload:
    """The reply to ``/agent controls [revision]``: who changed it and when, the settings that
    matter, and what changed from the previous revision."""
    current = overview.current
    info = current.info
    head: list = [
        header(OVERVIEW_TITLE.format(revision=info.revision)),
        context(CHANGED_BY.format(author=_author(info), when=_when(info, today))),
        *fields(summary_fields(overview.summary)),
        divider(),
    ]
    if current.previous is None:
        head.append(section(FIRST_REVISION.format(revision=info.revision)))
        outcome = "the first revision"
    else:
        head.append(section(CHANGES_FROM.format(previous=current.previous, count=_plural(len(current.changes), "change"))))
        outcome = f"{_plural(len(current.changes), 'change')} from revision {current.previous}"
        if not current.changes:
            head.append(section(NO_CHANGES))
    blocks = _capped(
        head, [change_line(c, overview.people) for c in current.changes], [context(esc_text(OVERVIEW_HINT))], esc_text(MORE_CHANGES)
    )
    text = f"Enterprise controls revision {info.revision}, changed by {_author(info)} on {_day(info)}: {outcome}."
    return message(blocks, text)


def _paths(entry: RevisionChanges) -> str:
    if entry.previous is None:
        return "_first revision_"
    if not entry.changes:
        return "_no setting changed_"
    paths = [setting_label(c.path) for c in entry.changes]
    more = len(paths) - PATHS_PER_REVISION
    return "changed " + ", ".join(paths[:PATHS_PER_REVISION]) + (f" +{more} more" if more > 0 else "")


def history_entry(entry: RevisionChanges, today: dt.date) -> str:
    """One revision of the history as escaped mrkdwn: number, author, time, changed paths."""
    info = entry.info
    return f"*Revision {info.revision}* \u00b7 {_author(info)} \u00b7 {_when(info, today)}\n{_paths(entry)}"


def controls_history(history: ControlsHistory, *, today: dt.date) -> Payload:
    """The reply to ``/agent controls history [n]``: the newest revisions, newest first."""
    revisions = history.revisions
    count = len(revisions)
    title = HISTORY_TITLE if count == history.requested else HISTORY_TITLE_ALL
    head: list = [header(title.format(revisions=_plural(count, "revision")))]
    entries = [history_entry(entry, today) for entry in revisions]
    blocks = _capped(head, entries, [context(esc_text(HISTORY_HINT))], esc_text(MORE_REVISIONS), per_section=5)
    span = f" ({revisions[0].info.revision} to {revisions[-1].info.revision})" if revisions else ""
    return message(blocks, f"The last {_plural(count, 'enterprise-control revision')}{span}.")


def controls_diff(diff: ControlsDiff, *, today: dt.date) -> Payload:
    """The reply to ``/agent controls diff <a> <b>``: every changed path from the older to the newer."""
    old, new = diff.old, diff.new
    count = len(diff.changes)
    head: list = [
        header(DIFF_TITLE.format(old=old.revision, new=new.revision)),
        context(
            f"*Revision {old.revision}*: {_author(old)} \u00b7 {_when(old, today)}",
            f"*Revision {new.revision}*: {_author(new)} \u00b7 {_when(new, today)}",
        ),
        section(CHANGE_COUNT.format(count=count, noun="setting" if count == 1 else "settings") if count else NO_CHANGES),
    ]
    blocks = _capped(head, [change_line(c, diff.people) for c in diff.changes], [], esc_text(MORE_CHANGES))
    text = f"Enterprise controls, revision {old.revision} \u2192 {new.revision}: {_plural(count, 'change')}."
    return message(blocks, text)


def no_history() -> Payload:
    """The reply when the organization has no enterprise-control history at all."""
    return message([section(f":information_source: {NO_HISTORY}"), context(NO_HISTORY_HINT)], NO_HISTORY)


def unknown_revision(missing: Sequence[int], available: Sequence[int]) -> tuple[str, str]:
    """``(what, hint)`` for revisions the history does not have; the hint names the range there is."""
    what = UNKNOWN_REVISION.format(missing=" or ".join(str(r) for r in missing))
    if not available:
        return what, NO_HISTORY
    return what, AVAILABLE_REVISIONS.format(low=min(available), high=max(available), count=len(available))
