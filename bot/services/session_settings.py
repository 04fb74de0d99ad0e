"""Session settings held to the enterprise controls: values the platform names, within the
organization's current limits, checked before anything is sent (``session set``, the start options).

Follows management-api-v0.md, "sessionSettings" and "Enterprise-control change" (the settings
snapshot's ``sessionDefaultSettings``, ``maxAutonomyLevel``, ``customModels``, ``modelPolicy``).

**Allowed values.** The spec does not show the allowed values of the enumerated settings ("Allowed
values of the enumerated fields ...: not shown"). The bot does not guess silently: a value is
allowed when the platform names it, that is when it is

- in the documented known list of its setting (:data:`KNOWN_VALUES`), taken from the values the
  platform's other document names:

  - ``reasoningEffort``, ``specModeReasoningEffort``: ``off``, ``low``, ``medium``, ``high``
    (analytics-and-readiness-api.md, readiness report, ``modelUsed.reasoningEffort`` allowed values);
  - ``autonomyLevel``: ``manual``, ``low``, ``medium``, ``high`` and ``auto-low``, ``auto-medium``,
    ``auto-high`` (the analytics ``tool_autonomy_level_ratio`` members ``manual``, ``auto_low``,
    ``auto_medium``, ``auto_high``, and the delegation levels; the platform's enterprise controls
    spell them either way, so both spellings are accepted and sent as typed);
  - ``autonomyMode``: ``auto-high``, ``auto-medium``, ``auto-low``, ``spec``, ``manual`` (the
    analytics ``delegation_level``, "Primary autonomy mode");
  - ``interactionMode``: ``spec`` (the delegation level ``spec``, "Specification mode", and the
    ``specMode*`` settings name a specification mode); the others come from the history;

- or in the enterprise-control history the bot reads (the newest page, up to
  :data:`bot.services.controls.MAX_PAGE_SIZE` revisions): ``sessionDefaultSettings``' values of
  each setting, ``maxAutonomyLevel`` and the values of ``mcpAutonomyOverrides`` (autonomy levels),
  and each custom model's ``reasoningEffort`` (reasoning efforts). Only short words are taken from
  the history (:data:`NAMED_VALUE`: letters, digits, ``-``, ``_``, ``.``, ``:``; at most 40
  characters), so a hostile snapshot cannot make any text "allowed".

Values compare exactly (case-sensitive): the platform's enums are sent as typed.

**Limits.** The autonomy level (and an ``autonomyMode`` that carries a level, ``auto-*``) may not be
above the latest revision's ``maxAutonomyLevel``. Levels are ordered ``manual`` = ``off`` < ``low``
< ``medium`` < ``high`` (:data:`AUTONOMY_RANK`; ``auto-high`` is ``high``). A maximum, or a value,
outside this order (not shown by the spec) cannot be compared: the bot does not refuse on it and
the platform decides.

**Models** (``model``, ``specModeModel``) are checked as :mod:`bot.services.sessions.models` always
did (the latest revision's ``modelPolicy``): a model in ``blockedModelIds`` is refused; a custom
model (its ``id`` or ``model``) passes when ``allowCustomModels`` is true; with a non-empty
``allowedModelIds`` a model not in it is refused, with the list; otherwise nothing here refuses it.

No history at all (no enterprise controls were ever set): the known lists decide the enumerated
values, no maximum applies and no model is refused. A history that cannot be read refuses the
request with what failed (:func:`check_session_settings`): nothing is guessed, nothing is sent.

Pure functions (:func:`rules_of`, :func:`check_settings`, :func:`allowed_values`,
:func:`allowed_models`, :func:`model_choices`) take the rules; :func:`fetch_settings_rules` and
:func:`check_session_settings` read the history through the Agent API client. The reasons are
:class:`bot.outcomes.Invalid` (words for :func:`formatters.notices.error_message`; the values in
them are escaped here with :func:`shown`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from bot.api import AgentAPIError
from bot.outcomes import Invalid
from bot.services.controls import MAX_PAGE_SIZE, ModelRules, read_history, summarize
from bot.user_errors import UserInputError, describe_api_error

if TYPE_CHECKING:
    from bot.api import AgentClient, EnterpriseControlChange

MODEL_SETTINGS: Final = ("model", "specModeModel")
"""The settings that name a model."""
REASONING_EFFORTS: Final = ("off", "low", "medium", "high")
AUTONOMY_LEVELS: Final = ("manual", "low", "medium", "high", "auto-low", "auto-medium", "auto-high")
AUTONOMY_MODES: Final = ("auto-high", "auto-medium", "auto-low", "spec", "manual")
INTERACTION_MODES: Final = ("spec",)
KNOWN_VALUES: Final[Mapping[str, tuple[str, ...]]] = {
    "reasoningEffort": REASONING_EFFORTS,
    "specModeReasoningEffort": REASONING_EFFORTS,
    "interactionMode": INTERACTION_MODES,
    "autonomyLevel": AUTONOMY_LEVELS,
    "autonomyMode": AUTONOMY_MODES,
}
"""The enumerated settings checked here and their documented values (module docstring)."""
LEVELLED: Final = ("autonomyLevel", "autonomyMode")
"""The settings held to ``maxAutonomyLevel`` (when their value has a rank)."""
AUTONOMY_RANK: Final[Mapping[str, int]] = {"manual": 0, "off": 0, "low": 1, "medium": 2, "high": 3}
"""The order of autonomy levels; ``auto-<level>`` has the rank of ``<level>``."""
NAMED_VALUE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,39}$")
"""What a value taken from the enterprise-control history must look like to count as named."""
MODELS_SHOWN: Final = 6
"""Allowed models at most named in a refusal."""
VALUES_SHOWN: Final = 10
"""Allowed values at most named in a refusal."""
_ESCAPES: Final = {ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;", ord("`"): "\u02cb"}

# user-facing copy (tests import these)
MODEL_BLOCKED = "The model `{model}` is blocked by your organization's enterprise controls (revision {revision})."
MODEL_NOT_ALLOWED = "The model `{model}` is not one your organization's enterprise controls allow (revision {revision})."
MODEL_ALLOWED_HINT = "Allowed: {models}. `/agent controls` shows the model policy; an owner can change it."
MODEL_NONE_ALLOWED_HINT = "`/agent controls` shows the model policy; an owner can change it."
VALUE_NOT_NAMED = "The platform names no {name} `{value}`."
VALUE_HINT = "Allowed: {values}."
ABOVE_MAXIMUM = (
    "The {name} `{value}` is above your organization's maximum autonomy level, `{maximum}` (enterprise controls, revision {revision})."
)
ABOVE_MAXIMUM_HINT = "Allowed: {values}. `/agent controls` shows the maximum; an owner can raise it."
CONTROLS_UNREADABLE = "I could not read the enterprise controls, so I cannot tell whether the model `{model}` is allowed: {what}"
CONTROLS_UNREADABLE_HINT = "Nothing was {done}. Try again in a minute, or leave out the model to use the default."
SETTING_UNREADABLE = "I could not read the enterprise controls, so I cannot tell whether the {name} `{value}` is allowed: {what}"
SETTING_UNREADABLE_HINT = "Nothing was {done}. Try again in a minute."


def setting_words(name: str) -> str:
    """A ``sessionSettings`` member as people read it: ``reasoningEffort`` -> ``reasoning effort``,
    ``specModeModel`` -> ``spec mode model`` (the key itself stays in usage hints, what to type)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()


def shown(value: object, limit: int = 80) -> str:
    """A user's or the API's value on one line for a code span, as every service's refusal shows
    one: whitespace collapsed, ``&<>`` escaped, backticks as ``ˋ``, cut to ``limit`` characters
    with an ellipsis."""
    text = " ".join(str(value).split()).translate(_ESCAPES)
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "\u2026"


@dataclass(frozen=True)
class CustomModel:
    """A custom model of the latest revision: ``id``, ``model`` and ``display_name`` (each may be empty)."""

    id: str
    model: str
    display_name: str = ""

    @property
    def value(self) -> str:
        """What a session's ``model`` names it by: its ``id``, else its ``model``."""
        return self.id or self.model


@dataclass(frozen=True)
class SettingsRules:
    """What the enterprise controls say about session settings (:func:`rules_of`).

    ``revision``: the latest revision; ``models``: its model lists (:class:`ModelRules`: allowed and
    blocked ids, the custom models' ids and models when ``allowCustomModels``); ``custom``: those
    custom models, for the form's options; ``max_autonomy_level``: its ``maxAutonomyLevel`` (None
    when absent or not a string); ``named``: setting -> the values the history names
    (:data:`NAMED_VALUE` words, first seen first)."""

    revision: int
    models: ModelRules
    max_autonomy_level: str | None = None
    named: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    custom: tuple[CustomModel, ...] = ()


def _get(node: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _named(value: Any) -> str | None:
    return value if isinstance(value, str) and NAMED_VALUE.match(value) else None


def _history_values(settings: Mapping[str, Any]) -> dict[str, list[str]]:
    """Setting -> the values one snapshot names for it (module docstring, "Allowed values")."""
    defaults = _get(settings, "sessionDefaultSettings")
    found: dict[str, list[str]] = {name: [] for name in KNOWN_VALUES}
    for name in KNOWN_VALUES:
        value = _named(_get(defaults, name))
        if value:
            found[name].append(value)
    efforts = [
        v for v in (_named(_get(m, "reasoningEffort")) for m in (_get(settings, "customModels") or ()) if isinstance(m, Mapping)) if v
    ]
    overrides = _get(settings, "mcpAutonomyOverrides")
    levels = [
        _named(_get(settings, "maxAutonomyLevel")),
        *((_named(v) for v in overrides.values()) if isinstance(overrides, Mapping) else ()),
    ]
    for name in ("reasoningEffort", "specModeReasoningEffort"):
        found[name] += efforts
    found["autonomyLevel"] += [v for v in levels if v]
    return found


def rules_of(changes: Iterable[EnterpriseControlChange]) -> SettingsRules | None:
    """The :class:`SettingsRules` of enterprise-control ``changes`` (any order; the highest
    revision is the latest); None when there are none."""
    ordered = sorted(changes, key=lambda change: change.revision, reverse=True)
    if not ordered:
        return None
    latest = ordered[0]
    policy = summarize(latest.settings).model_policy
    custom: list[CustomModel] = []
    if policy.allow_custom_models:
        for item in _get(latest.settings, "customModels") or ():
            if isinstance(item, Mapping):
                text = [value if isinstance(value := item.get(key), str) else "" for key in ("id", "model", "displayName")]
                if text[0] or text[1]:
                    custom.append(CustomModel(*text))
    named: dict[str, list[str]] = {name: [] for name in KNOWN_VALUES}
    for change in ordered:
        for name, values in _history_values(change.settings).items():
            named[name] = list(dict.fromkeys((*named[name], *values)))
    maximum = _get(latest.settings, "maxAutonomyLevel")
    return SettingsRules(
        revision=latest.revision,
        models=ModelRules(latest.revision, policy, tuple(v for m in custom for v in (m.id, m.model) if v)),
        max_autonomy_level=maximum if isinstance(maximum, str) else None,
        named={name: tuple(values) for name, values in named.items()},
        custom=tuple(custom),
    )


def autonomy_rank(value: str | None) -> int | None:
    """The rank of an autonomy level (:data:`AUTONOMY_RANK`; ``auto-`` prefix aside), None when it has none."""
    if value is None:
        return None
    return AUTONOMY_RANK.get(value.removeprefix("auto-"))


def allowed_values(rules: SettingsRules | None, name: str) -> tuple[str, ...]:
    """The values of setting ``name`` the platform names: its known list, then those of the
    history (module docstring); empty for a setting that is not enumerated (:data:`KNOWN_VALUES`)."""
    known = KNOWN_VALUES.get(name, ())
    named = rules.named.get(name, ()) if rules is not None else ()
    return tuple(dict.fromkeys((*known, *named)))


def within_maximum(rules: SettingsRules | None, name: str) -> tuple[str, ...]:
    """The values of ``name`` that are allowed today: :func:`allowed_values` without those above
    ``maxAutonomyLevel`` (for a setting of :data:`LEVELLED`; a value without a rank stays)."""
    values = allowed_values(rules, name)
    top = autonomy_rank(rules.max_autonomy_level) if rules is not None and name in LEVELLED else None
    if top is None:
        return values
    return tuple(v for v in values if (autonomy_rank(v) is None or autonomy_rank(v) <= top))  # type: ignore[operator]


def _listed(values: Sequence[str], limit: int) -> str:
    return _joined([f"`{shown(v, 60)}`" for v in values], limit)


def _joined(names: Sequence[str], limit: int) -> str:
    """``names`` (mrkdwn-safe) joined with commas, at most ``limit`` and how many more; ``none`` when empty."""
    text = ", ".join(names[:limit])
    return (text + (f" and {len(names) - limit} more" if len(names) > limit else "")) or "none"


def allowed_models(rules: SettingsRules | None) -> list[str]:
    """The models a person may choose (the start form's select): the allowed ids that are not
    blocked, then the custom models (their ``id``, else ``model``) when ``allowCustomModels``.
    Empty when the controls name no allowed list (no history, or an empty ``allowedModelIds``):
    then the platform decides and the bot cannot list the models (the spec names no catalog), so
    the form should keep a free-text field (or offer only the default)."""
    if rules is None or not rules.models.policy.allowed_model_ids:
        return []
    blocked = set(rules.models.policy.blocked_model_ids or ())
    ids = [m for m in rules.models.policy.allowed_model_ids if m not in blocked]
    return list(dict.fromkeys([*ids, *(m.value for m in rules.custom if m.value not in blocked)]))


def model_choices(rules: SettingsRules | None) -> list[tuple[str, str]]:
    """:func:`allowed_models` as ``(value, label)`` pairs for a select: a custom model is labelled
    with its display name (else its value)."""
    labels = {m.value: m.display_name or m.value for m in (rules.custom if rules else ())}
    return [(value, labels.get(value, value)) for value in allowed_models(rules)]


def allowed_model_list(rules: ModelRules | SettingsRules) -> str:
    """The allowed models, at most :data:`MODELS_SHOWN`, as code spans: the allowed ids, then the
    custom models. With :class:`SettingsRules` each custom model is named once, by what a session's
    ``model`` names it by (:attr:`CustomModel.value`: its ``id``, the model identifier
    management-api-v0.md's ``sessionSettings`` and ``modelPolicy`` use), followed by its display
    name; :class:`ModelRules` alone knows only each custom model's id and model, both listed."""
    if isinstance(rules, ModelRules):
        return _listed([*(rules.policy.allowed_model_ids or ()), *rules.custom_models], MODELS_SHOWN)
    ids = list(dict.fromkeys(rules.models.policy.allowed_model_ids or ()))
    custom = {m.value: m.display_name for m in rules.custom if m.value not in ids}
    names = [f"`{shown(v, 60)}`" for v in ids] + [_custom_name(value, display) for value, display in custom.items()]
    return _joined(names, MODELS_SHOWN)


def _custom_name(value: str, display_name: str) -> str:
    """A custom model in a list: ``custom:acme-coder-70b-0`` as a code span, then its display name."""
    return f"`{shown(value, 60)}`" + (f" ({shown(display_name, 60)})" if display_name and display_name != value else "")


def model_invalid(rules: ModelRules | SettingsRules | None, model: str) -> Invalid | None:
    """Why ``model`` may not be used under ``rules`` (module docstring, "Models"), or None; the
    refusal's hint lists the allowed models (:func:`allowed_model_list`)."""
    listed = rules
    if isinstance(rules, SettingsRules):
        rules = rules.models
    if rules is None or listed is None:
        return None
    allowed, blocked = rules.policy.allowed_model_ids or (), rules.policy.blocked_model_ids or ()
    hint = MODEL_ALLOWED_HINT.format(models=allowed_model_list(listed)) if allowed or rules.custom_models else MODEL_NONE_ALLOWED_HINT
    if model in blocked:
        return Invalid(MODEL_BLOCKED.format(model=shown(model), revision=rules.revision), hint)
    if model in rules.custom_models or not allowed or model in allowed:
        return None
    return Invalid(MODEL_NOT_ALLOWED.format(model=shown(model), revision=rules.revision), hint)


def setting_invalid(rules: SettingsRules | None, name: str, value: str) -> Invalid | None:
    """Why ``name=value`` may not be set under ``rules`` (module docstring), or None. A setting
    that is neither a model nor enumerated (:data:`KNOWN_VALUES`) is not checked here."""
    if name in MODEL_SETTINGS:
        return model_invalid(rules, value)
    if name not in KNOWN_VALUES:
        return None
    if value not in allowed_values(rules, name):
        return Invalid(
            VALUE_NOT_NAMED.format(value=shown(value), name=setting_words(name)),
            VALUE_HINT.format(values=_listed(within_maximum(rules, name), VALUES_SHOWN)),
        )
    if rules is not None and name in LEVELLED:
        rank, top = autonomy_rank(value), autonomy_rank(rules.max_autonomy_level)
        if rank is not None and top is not None and rank > top:
            return Invalid(
                ABOVE_MAXIMUM.format(
                    name=setting_words(name),
                    value=shown(value),
                    maximum=shown(rules.max_autonomy_level),
                    revision=rules.revision,
                ),
                ABOVE_MAXIMUM_HINT.format(values=_listed(within_maximum(rules, name), VALUES_SHOWN)),
            )
    return None


def check_settings(changes: Mapping[str, str], rules: SettingsRules | None) -> list[Invalid]:
    """Every reason the ``sessionSettings`` ``changes`` (member -> value as typed) may not be sent
    under ``rules`` (None: no enterprise controls were ever set), in the order of ``changes``;
    empty when all may."""
    return [found for name, value in changes.items() if (found := setting_invalid(rules, name, value)) is not None]


async def fetch_settings_rules(agent: AgentClient) -> SettingsRules | None:
    """The :class:`SettingsRules` of the newest page of the enterprise-control history (one
    ``GET .../enterprise-controls/history?limit=100`` when the platform lists newest first, as
    :func:`bot.services.controls.read_history` reads it); None when the history is empty. Raises
    the client's :class:`bot.api.AgentAPIError`."""
    seen = await read_history(agent, page_size=MAX_PAGE_SIZE, enough=lambda _seen, read: read >= MAX_PAGE_SIZE)
    return rules_of(seen.values())


async def check_session_settings(agent: AgentClient, changes: Mapping[str, str], *, done: str) -> None:
    """Raise :class:`UserInputError` unless every one of ``changes`` (``sessionSettings`` member ->
    value) is allowed (:func:`check_settings`; several reasons are said together). Nothing to check
    (no model and no enumerated setting): no call. ``done`` says in the refusal what did not
    happen (``started``, ``changed``) when the history cannot be read (:class:`bot.api.AgentAPIError`):
    the request is refused with what failed, nothing is guessed."""
    checked = {name: value for name, value in changes.items() if name in MODEL_SETTINGS or name in KNOWN_VALUES}
    if not checked:
        return
    try:
        rules = await fetch_settings_rules(agent)
    except AgentAPIError as exc:
        what, _hint = describe_api_error(exc)
        model = next((name for name in MODEL_SETTINGS if name in checked), None)
        if model is not None:
            raise UserInputError(
                CONTROLS_UNREADABLE.format(model=shown(checked[model]), what=what), CONTROLS_UNREADABLE_HINT.format(done=done)
            ) from None
        name, value = next(iter(checked.items()))
        raise UserInputError(
            SETTING_UNREADABLE.format(name=setting_words(name), value=shown(value), what=what), SETTING_UNREADABLE_HINT.format(done=done)
        ) from None
    found = check_settings(checked, rules)
    if found:
        hints = list(dict.fromkeys(reason.hint for reason in found if reason.hint))
        raise UserInputError(" ".join(reason.message for reason in found), " ".join(hints))
