"""Enterprise-control history: the latest revision, the last n revisions, and the diff of any two.

Follows management-api-v0.md, "Enterprise-control change" and ``GET .../enterprise-controls/history``.
Every function returns typed results for :mod:`formatters.controls`; settings values in them are
*public* (:func:`bot.api.redaction.public_value`): a secret is never carried past this module, not
even its fingerprint.

The generic diff (:func:`diff_settings`) walks two settings snapshots, whatever members they have
(the platform may add or rename settings), and reports dotted paths with list indices
(``customModels[0].baseUrl``; a key that is not a plain identifier is quoted: ``x["a.b"]``):

- a member only in the newer snapshot is *added*, only in the older one *removed*, a different
  value (or a different JSON type) *changed*; objects are compared member by member.
- lists of scalars are compared as multisets: one *items* change with the items added and
  removed, or *reordered* when only the order differs.
- lists of objects are matched by their ``id`` member when every item on both sides has a
  distinct one, else by ``model``, else by position; the path index is the item's position in the
  newer list (in the older list for a removed item). Matched items are compared member by member.
- a secret (a fingerprinted value, see :mod:`bot.api.redaction`, or any string under a member
  whose name looks like a credential) is reported as added, removed or changed *without values*.

Order of the history: the sandbox and the platform list newest first, but the spec does not say so.
The reader stops early only while the revisions it has read are strictly descending; as soon as
they are not, it reads the whole history and sorts it. Predecessor of a revision = the highest
lower revision present.

Errors: :class:`UnknownRevisionError` (a revision that the history does not have), and the
client's :class:`bot.api.AgentAPIError` subclasses, which propagate.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # formatters import the data types here and must stay off the transport
    from types import ModuleType

    from bot.api import AgentClient, EnterpriseControlChange

logger = logging.getLogger(__name__)

MAX_PAGE_SIZE = 100
"""The history endpoint's largest ``limit``."""
MAX_HISTORY = 100
"""Most revisions ``/agent controls history [n]`` shows."""
DEFAULT_HISTORY = 10


class UnknownRevisionError(LookupError):
    """Asked for revisions the history does not have: ``missing`` (sorted), ``available`` (sorted)."""

    def __init__(self, missing: Sequence[int], available: Sequence[int]) -> None:
        super().__init__(f"unknown revision(s) {', '.join(map(str, missing))}")
        self.missing = tuple(missing)
        self.available = tuple(available)


class ChangeKind(StrEnum):
    """What happened at a path."""

    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    ITEMS = "items"  # a list of scalars gained or lost items
    REORDERED = "reordered"  # a list of scalars kept its items in another order


@dataclass(frozen=True)
class SettingChange:
    """One difference between two settings snapshots, at ``path``.

    ``old``/``new``: public JSON values (``old`` for removed and changed, ``new`` for added and
    changed); ``added_items``/``removed_items`` for :attr:`ChangeKind.ITEMS`. ``type_change`` is
    ``(old JSON type, new JSON type)`` when a changed value changed type. When ``secret`` is true
    every value field is empty: only the path and the kind may be shown.
    """

    path: str
    kind: ChangeKind
    old: Any = None
    new: Any = None
    added_items: tuple[Any, ...] = ()
    removed_items: tuple[Any, ...] = ()
    type_change: tuple[str, str] | None = None
    secret: bool = False


@dataclass(frozen=True)
class RevisionInfo:
    """Who changed the settings and when: ``revision`` number, author name and e-mail (either may
    be ``None``), ``updated_at`` (aware, UTC; a naive time from the API is taken as UTC; a leap
    second ``23:59:60`` reads as ``23:59:59``; ``None`` when the moment is not representable in
    UTC, such as ``9999-12-31T23:00:00-01:00``) and ``updated_at_text``, the value as sent."""

    revision: int
    author_name: str | None
    author_email: str | None
    updated_at: datetime | None
    updated_at_text: str = ""


@dataclass(frozen=True)
class RevisionChanges:
    """A revision and what it changed against ``previous`` (its predecessor's number; ``None``
    when it is the first revision, and then ``changes`` is empty)."""

    info: RevisionInfo
    previous: int | None
    changes: tuple[SettingChange, ...]


@dataclass(frozen=True)
class ModelPolicySummary:
    """``modelPolicy`` and ``customModels`` of a snapshot; ``None`` where a member is absent or
    not of the spec's type. ``custom_models`` are display names (else model, else id)."""

    allowed_model_ids: tuple[str, ...] | None = None
    blocked_model_ids: tuple[str, ...] | None = None
    allow_custom_models: bool | None = None
    allowed_base_urls: tuple[str, ...] | None = None
    allow_all_service_models: bool | None = None
    fast_models_allowed: bool | None = None
    custom_models: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SettingsSummary:
    """The settings that matter, read tolerantly from a snapshot: each ``None`` when absent or not
    of the spec's type. ``session_defaults`` keeps the snapshot's ``(member, value)`` pairs of
    scalars; e-mail lists are reduced to counts; ``retention_days`` is days."""

    session_defaults: tuple[tuple[str, Any], ...] | None = None
    max_autonomy_level: str | None = None
    model_policy: ModelPolicySummary = field(default_factory=ModelPolicySummary)
    mcp_enabled: bool | None = None
    mcp_allowlist: tuple[str, ...] | None = None
    sandbox_enabled: bool | None = None
    sandbox_mode: str | None = None
    sandbox_allowed_domains: tuple[str, ...] | None = None
    network_allowed_ips: tuple[str, ...] | None = None
    managed_computers_enabled: bool | None = None
    managed_computers_allowed_emails: int | None = None
    byom_computers_enabled: bool | None = None
    byom_computers_allowed_emails: int | None = None
    retention_days: int | None = None


@dataclass(frozen=True)
class ControlsOverview:
    """What ``/agent controls [revision]`` shows: one revision, its settings and its changes;
    ``people``: organization user ID -> name, for the IDs its changes mention (:func:`user_names`)."""

    current: RevisionChanges
    summary: SettingsSummary
    people: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ControlsHistory:
    """The ``requested`` newest revisions (fewer when the history is shorter), newest first."""

    revisions: tuple[RevisionChanges, ...]
    requested: int


@dataclass(frozen=True)
class ControlsDiff:
    """The difference from revision ``old`` to revision ``new`` (``old.revision <= new.revision``)."""

    old: RevisionInfo
    new: RevisionInfo
    changes: tuple[SettingChange, ...]
    people: Mapping[str, str] = field(default_factory=dict)
    """Organization user ID -> name, for the IDs the changes mention (:func:`user_names`)."""


# ---- the generic diff ------------------------------------------------------------------------


def _redaction() -> ModuleType:
    """:mod:`bot.api.redaction`, imported on first use: importing it at the top would load the
    ``bot.api`` package and its transport into every formatter that imports the types above."""
    from bot.api import redaction

    return redaction


_SCALARS = (str, int, float, bool, type(None))


def json_type(value: Any) -> str:
    """The JSON type name of a value: object, array, string, number, boolean, null."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "object"


def _member_path(parent: str, key: Any) -> str:
    key = str(key)
    if key.replace("_", "a").replace("-", "a").isalnum() and not key[0].isdigit():
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"


def _same(old: Any, new: Any) -> bool:
    """Equal as JSON, types included (Python alone says ``1 == True`` and ``{"a": 1} == {"a": 1.0}``)."""
    if json_type(old) != json_type(new):
        return False
    if isinstance(old, dict):
        return old.keys() == new.keys() and all(_same(v, new[k]) for k, v in old.items())
    if isinstance(old, list):
        return len(old) == len(new) and all(_same(a, b) for a, b in zip(old, new, strict=True))
    return bool(old == new)


def _is_key(values: list[Any]) -> bool:
    """Every value a non-empty string or an int (not a bool), and no two alike."""
    usable = all(isinstance(v, str | int) and not isinstance(v, bool) and v != "" for v in values)
    return usable and len(set(values)) == len(values)


def _match_key(old: list[Any], new: list[Any]) -> str | None:
    for key in ("id", "model"):
        if all(_is_key([item.get(key) if isinstance(item, dict) else None for item in items]) for items in (old, new)):
            return key
    return None


def _hashable(value: Any) -> Any:
    return (json_type(value), value)


class _Differ:
    def __init__(self) -> None:
        self.out: list[SettingChange] = []
        self.redaction = _redaction()

    def secret(self, name: str, *values: Any) -> bool:
        """Values that must not be shown: a fingerprint among them, or strings under a member whose
        name looks like a credential (numbers and booleans under such names are not secrets)."""
        if any(self.redaction.is_fingerprint(v) for v in values):
            return True
        return bool(name) and self.redaction.is_credential_name(name) and any(isinstance(v, str) for v in values)

    def emit(self, path: str, kind: ChangeKind, old: Any = None, new: Any = None, *, name: str = "") -> None:
        """Record a change; a secret on either side records the path and the kind only. Objects and
        lists keep their members, their secrets shown as :data:`bot.api.redaction.REDACTED_TEXT`."""
        if self.secret(name, old, new):
            self.out.append(SettingChange(path, kind, secret=True))
            return
        types = (json_type(old), json_type(new))
        type_change = types if kind is ChangeKind.CHANGED and types[0] != types[1] else None
        public = self.redaction.public_value
        self.out.append(SettingChange(path, kind, public(old), public(new), type_change=type_change))

    def value(self, path: str, name: str, old: Any, new: Any) -> None:
        if _same(old, new):
            return
        if isinstance(old, dict) and isinstance(new, dict):
            self.mapping(path, old, new)
        elif isinstance(old, list) and isinstance(new, list):
            self.sequence(path, name, old, new)
        else:
            self.emit(path, ChangeKind.CHANGED, old, new, name=name)

    def mapping(self, path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        for key, before in old.items():
            child = _member_path(path, key)
            if key in new:
                self.value(child, str(key), before, new[key])
            else:
                self.emit(child, ChangeKind.REMOVED, old=before, name=str(key))
        for key, after in new.items():
            if key not in old:
                self.emit(_member_path(path, key), ChangeKind.ADDED, new=after, name=str(key))

    def sequence(self, path: str, name: str, old: list[Any], new: list[Any]) -> None:
        if all(isinstance(v, _SCALARS) for v in (*old, *new)):
            self.scalars(path, name, old, new)
            return
        key = _match_key(old, new)
        if key is None:
            for index in range(max(len(old), len(new))):
                child = f"{path}[{index}]"
                if index >= len(old):
                    self.emit(child, ChangeKind.ADDED, new=new[index])
                elif index >= len(new):
                    self.emit(child, ChangeKind.REMOVED, old=old[index])
                else:
                    self.value(child, name, old[index], new[index])
            return
        old_by_key = {item[key]: item for item in old}
        new_keys = {item[key] for item in new}
        for index, item in enumerate(new):
            if item[key] in old_by_key:
                self.value(f"{path}[{index}]", name, old_by_key[item[key]], item)
            else:
                self.emit(f"{path}[{index}]", ChangeKind.ADDED, new=item)
        for index, item in enumerate(old):
            if item[key] not in new_keys:
                self.emit(f"{path}[{index}]", ChangeKind.REMOVED, old=item)

    def scalars(self, path: str, name: str, old: list[Any], new: list[Any]) -> None:
        if self.secret(name, *old, *new):
            self.out.append(SettingChange(path, ChangeKind.CHANGED, secret=True))
            return
        before, after = Counter(map(_hashable, old)), Counter(map(_hashable, new))
        added = [v for _, v in (after - before).elements()]
        removed = [v for _, v in (before - after).elements()]
        if added or removed:
            self.out.append(SettingChange(path, ChangeKind.ITEMS, added_items=tuple(added), removed_items=tuple(removed)))
        else:
            self.out.append(SettingChange(path, ChangeKind.REORDERED))


def diff_settings(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[SettingChange, ...]:
    """Every difference from settings snapshot ``old`` to ``new`` (see the module docstring).

    Both are redacted first (idempotent), so raw snapshots are safe too. Order: the older
    snapshot's member order, members only in the newer one after; list items by position.
    """
    differ = _Differ()
    redact = differ.redaction.redact_settings
    differ.value("", "", redact(dict(old)), redact(dict(new)))
    return tuple(differ.out)


# ---- the summary of a snapshot ---------------------------------------------------------------


def _dig(settings: Mapping[str, Any], dotted: str, kind: type | tuple[type, ...]) -> Any:
    node: Any = settings
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    if kind is int and isinstance(node, bool):
        return None
    return node if isinstance(node, kind) else None


def _strings(settings: Mapping[str, Any], dotted: str) -> tuple[str, ...] | None:
    items = _dig(settings, dotted, list)
    return None if items is None else tuple(str(v) for v in items)


def _count(settings: Mapping[str, Any], dotted: str) -> int | None:
    items = _dig(settings, dotted, list)
    return None if items is None else len(items)


def _custom_model_names(settings: Mapping[str, Any]) -> tuple[str, ...] | None:
    models = _dig(settings, "customModels", list)
    if models is None:
        return None
    names = []
    for model in models:
        if isinstance(model, dict):
            names.append(str(model.get("displayName") or model.get("model") or model.get("id") or "unnamed"))
    return tuple(names)


def summarize(settings: Mapping[str, Any]) -> SettingsSummary:
    """The :class:`SettingsSummary` of a settings snapshot (public values only)."""
    redaction = _redaction()
    settings = redaction.public_value(redaction.redact_settings(dict(settings)))
    defaults = _dig(settings, "sessionDefaultSettings", dict)
    return SettingsSummary(
        session_defaults=None
        if defaults is None
        else tuple((k, v) for k, v in defaults.items() if isinstance(v, _SCALARS) and v is not None),
        max_autonomy_level=_dig(settings, "maxAutonomyLevel", str),
        model_policy=ModelPolicySummary(
            allowed_model_ids=_strings(settings, "modelPolicy.allowedModelIds"),
            blocked_model_ids=_strings(settings, "modelPolicy.blockedModelIds"),
            allow_custom_models=_dig(settings, "modelPolicy.allowCustomModels", bool),
            allowed_base_urls=_strings(settings, "modelPolicy.allowedBaseUrls"),
            allow_all_service_models=_dig(settings, "modelPolicy.allowAllServiceModels", bool),
            fast_models_allowed=_dig(settings, "modelPolicy.isFastModelsAllowed", bool),
            custom_models=_custom_model_names(settings),
        ),
        mcp_enabled=_dig(settings, "mcpPolicy.enabled", bool),
        mcp_allowlist=_strings(settings, "mcpPolicy.allowlist"),
        sandbox_enabled=_dig(settings, "sandbox.enabled", bool),
        sandbox_mode=_dig(settings, "sandbox.mode", str),
        sandbox_allowed_domains=_strings(settings, "sandbox.network.allowedDomains"),
        network_allowed_ips=_strings(settings, "networkPolicy.allowedIps"),
        managed_computers_enabled=_dig(settings, "managedComputersEnabled", bool),
        managed_computers_allowed_emails=_count(settings, "managedComputersAllowedEmails"),
        byom_computers_enabled=_dig(settings, "byomComputersEnabled", bool),
        byom_computers_allowed_emails=_count(settings, "byomComputersAllowedEmails"),
        retention_days=_dig(settings, "sessionRetentionDays", int),
    )


# ---- reading the history ---------------------------------------------------------------------


_LEAP_SECOND = re.compile(r"(T\d\d:\d\d:)60")


def utc_moment(value: datetime | str) -> datetime | None:
    """``value`` as an aware UTC datetime: naive is taken as UTC, a leap second (``...:60``) as
    ``...:59``; ``None`` for text that is no date-time or a moment outside years 1..9999 in UTC."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(_LEAP_SECOND.sub(r"\g<1>59", value.replace("z", "Z")))
        except ValueError:
            return None
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:
        return None


def revision_info(change: EnterpriseControlChange) -> RevisionInfo:
    """The :class:`RevisionInfo` of an API change (one odd ``updatedAt`` never fails the reply)."""
    raw = change.updated_at if isinstance(change.updated_at, str) else change.updated_at.isoformat()
    return RevisionInfo(change.revision, change.user.name or None, change.user.email or None, utc_moment(change.updated_at), raw)


def changes_of(change: EnterpriseControlChange, previous: EnterpriseControlChange | None) -> RevisionChanges:
    if previous is None:
        return RevisionChanges(revision_info(change), None, ())
    return RevisionChanges(revision_info(change), previous.revision, diff_settings(previous.settings, change.settings))


async def read_history(
    agent: AgentClient, *, page_size: int, enough: Callable[[Mapping[int, Any], int], bool]
) -> dict[int, EnterpriseControlChange]:
    """Changes by revision. Stops early once ``enough(changes so far, count read)`` holds while
    the revisions read so far strictly descend; otherwise reads the whole history."""
    seen: dict[int, EnterpriseControlChange] = {}
    order: list[int] = []
    descending = True
    changes = agent.iter_enterprise_controls_history(page_size=min(max(page_size, 1), MAX_PAGE_SIZE))
    async with contextlib.aclosing(changes):
        async for change in changes:
            if order and change.revision >= order[-1]:
                descending = False
            order.append(change.revision)
            seen.setdefault(change.revision, change)
            if descending and enough(seen, len(order)):
                break
    return seen


def predecessor(seen: Mapping[int, EnterpriseControlChange], revision: int) -> EnterpriseControlChange | None:
    lower = [r for r in seen if r < revision]
    return seen[max(lower)] if lower else None


async def fetch_overview(agent: AgentClient, revision: int | None = None) -> ControlsOverview | None:
    """The newest revision (or ``revision``) with its settings summary and its changes against
    its predecessor; ``None`` when the history is empty. Raises :class:`UnknownRevisionError`
    for a ``revision`` the history does not have, and the client's errors."""
    if revision is None:
        seen = await read_history(agent, page_size=2, enough=lambda _seen, read: read >= 2)
        if not seen:
            return None
        wanted = max(seen)
    else:
        seen = await read_history(
            agent,
            page_size=MAX_PAGE_SIZE,
            enough=lambda found, _read: revision in found and min(found) < revision,  # its predecessor
        )
        if revision not in seen:
            raise UnknownRevisionError([revision], sorted(seen))
        wanted = revision
    change = seen[wanted]
    current = changes_of(change, predecessor(seen, wanted))
    people = await user_names(agent, people_in(current.changes))
    return ControlsOverview(current, summarize(change.settings), people)


@dataclass(frozen=True)
class ModelRules:
    """The model lists of the latest enterprise-control revision (``revision``), for checking a
    model a person asks for: ``policy`` (its ``modelPolicy`` summary: allowed and blocked ids) and
    ``custom_models`` (each custom model's ``id`` and ``model``; empty unless
    ``modelPolicy.allowCustomModels`` is true)."""

    revision: int
    policy: ModelPolicySummary
    custom_models: tuple[str, ...] = ()


async def fetch_model_rules(agent: AgentClient) -> ModelRules | None:
    """The :class:`ModelRules` of the newest revision (read as :func:`fetch_overview` reads it);
    ``None`` when the history is empty (no enterprise controls were ever set). Raises the client's
    errors (management-api-v0.md, ``GET .../enterprise-controls/history``, "Settings snapshot")."""
    seen = await read_history(agent, page_size=2, enough=lambda _seen, read: read >= 2)
    if not seen:
        return None
    change = seen[max(seen)]
    policy = summarize(change.settings).model_policy
    custom: list[str] = []
    if policy.allow_custom_models:
        for model in _dig(change.settings, "customModels", list) or []:
            if isinstance(model, dict):
                custom.extend(str(model[key]) for key in ("id", "model") if isinstance(model.get(key), str))
    return ModelRules(change.revision, policy, tuple(custom))


async def fetch_history(agent: AgentClient, count: int = DEFAULT_HISTORY) -> ControlsHistory:
    """The ``count`` newest revisions (1..100), newest first, each with the paths it changed
    against its predecessor (``count + 1`` changes are read, page size up to 100).
    Raises ``ValueError`` for a ``count`` out of range, and the client's errors."""
    if not 1 <= count <= MAX_HISTORY:
        raise ValueError(f"count must be 1 to {MAX_HISTORY}")
    seen = await read_history(agent, page_size=count + 1, enough=lambda _seen, read: read > count)
    newest = sorted(seen, reverse=True)[:count]
    revisions = tuple(changes_of(seen[r], predecessor(seen, r)) for r in newest)
    return ControlsHistory(revisions, count)


async def fetch_diff(agent: AgentClient, first: int, second: int) -> ControlsDiff:
    """The difference between two revisions, in either order (reported older -> newer).
    Raises :class:`UnknownRevisionError` naming the missing ones and the available revisions,
    and the client's errors."""
    low, high = sorted((first, second))
    seen = await read_history(agent, page_size=MAX_PAGE_SIZE, enough=lambda found, _read: low in found and high in found)
    missing = sorted({r for r in (low, high) if r not in seen})
    if missing:
        raise UnknownRevisionError(missing, sorted(seen))
    old, new = seen[low], seen[high]
    changes = diff_settings(old.settings, new.settings)
    return ControlsDiff(revision_info(old), revision_info(new), changes, await user_names(agent, people_in(changes)))


USER_ID_PATH = re.compile(r"UserIds(?:\[\d+\])?$")
"""Settings whose values are organization user IDs (``missionPolicy.allowedUserIds``)."""
PEOPLE_PAGES = 20
"""Pages of organization users (100 each) read at most to name the IDs of a reply."""


def people_in(changes: Iterable[SettingChange]) -> set[str]:
    """The organization user IDs the changes of :data:`USER_ID_PATH` settings mention."""
    found: set[str] = set()
    for change in changes:
        if change.secret or not USER_ID_PATH.search(change.path):
            continue
        for value in (change.old, change.new, *change.added_items, *change.removed_items):
            values = value if isinstance(value, list) else [value]
            found.update(v for v in values if isinstance(v, str) and v)
    return found


async def user_names(agent: AgentClient, ids: set[str], *, max_pages: int = PEOPLE_PAGES) -> dict[str, str]:
    """``{id: "First Last" or e-mail}`` for the organization users among ``ids`` (GET
    /api/v0/organization/users, stopping once all are found or after ``max_pages`` pages). Names
    are a courtesy: an ID not found stays an ID, and an API failure gives ``{}`` (logged)."""
    from bot.api.errors import AgentAPIError  # here: formatters import this module's data types

    if not ids:
        return {}
    names: dict[str, str] = {}
    try:
        async with contextlib.aclosing(agent.iter_organization_users(max_pages=max_pages)) as users:
            async for user in users:
                if user.id in ids:
                    full = " ".join(p for p in (user.first_name, user.last_name) if p)
                    names[user.id] = full or user.email
                    if len(names) == len(ids):
                        break
    except AgentAPIError as exc:
        logger.info("organization users for naming %d IDs: %s", len(ids), type(exc).__name__)
    return names
