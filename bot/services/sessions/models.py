"""Whether a model a person asks for (``model=`` at a session start by command, mention or form;
``session set <id> model=...`` or ``specModeModel=...``) is one the enterprise controls allow,
checked before the Agent API is called.

The rules are those of the latest enterprise-control revision (:func:`bot.services.controls.fetch_model_rules`,
management-api-v0.md, "Settings snapshot", ``modelPolicy``):

- a model in ``blockedModelIds`` is refused;
- a custom model (its ``id`` or ``model``) passes when ``allowCustomModels`` is true;
- when ``allowedModelIds`` is a non-empty list, a model not in it is refused, with that list;
- otherwise (an empty or absent list, no revision at all) nothing here refuses it: the platform
  decides. ``allowAllServiceModels`` does not widen the list: the spec names no catalog of service
  models, so the bot cannot tell which ids it covers (shown in ``/agent controls``).

When the history cannot be read, the request is refused with what failed: the bot does not guess.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from bot.api import AgentAPIError, AgentClient
from bot.services.controls import ModelRules, fetch_model_rules
from bot.user_errors import UserInputError, describe_api_error

Quote = Callable[[object, int], str]
"""Puts an API or user value into the words of a reason: escaped for mrkdwn, on one line, cut to
the limit (:meth:`bot.services.sessions.messages.SessionMessages.one_line`, handed in at wiring)."""

MODELS_SHOWN: Final = 6
"""Allowed models at most named in a refusal."""
MODEL_BLOCKED = "The model `{model}` is blocked by your organization's enterprise controls (revision {revision})."
MODEL_NOT_ALLOWED = "The model `{model}` is not one your organization's enterprise controls allow (revision {revision})."
MODEL_ALLOWED_HINT = "Allowed: {models}. `/agent controls` shows the model policy; an owner can change it."
MODEL_NONE_ALLOWED_HINT = "`/agent controls` shows the model policy; an owner can change it."
CONTROLS_UNREADABLE = "I could not read the enterprise controls, so I cannot tell whether the model `{model}` is allowed: {what}"
CONTROLS_UNREADABLE_HINT = "Nothing was {done}. Try again in a minute, or leave out the model to use the default."


def allowed_list(rules: ModelRules, *, one_line: Quote) -> str:
    """The allowed models (the allowed ids, then the custom models), at most :data:`MODELS_SHOWN`,
    each put in words by ``one_line``."""
    names = [*(rules.policy.allowed_model_ids or ()), *rules.custom_models]
    shown = ", ".join(f"`{one_line(name, 60)}`" for name in names[:MODELS_SHOWN])
    return shown + (f" and {len(names) - MODELS_SHOWN} more" if len(names) > MODELS_SHOWN else "")


def model_refusal(rules: ModelRules | None, model: str, *, one_line: Quote) -> UserInputError | None:
    """Why ``model`` may not be used under ``rules`` (the module docstring's rules), or None;
    ``one_line`` puts the model ids into its words."""
    if rules is None:
        return None
    allowed, blocked = rules.policy.allowed_model_ids or (), rules.policy.blocked_model_ids or ()
    shown = one_line(model, 80)
    hint = (
        MODEL_ALLOWED_HINT.format(models=allowed_list(rules, one_line=one_line))
        if allowed or rules.custom_models
        else MODEL_NONE_ALLOWED_HINT
    )
    if model in blocked:
        return UserInputError(MODEL_BLOCKED.format(model=shown, revision=rules.revision), hint)
    if model in rules.custom_models or not allowed or model in allowed:
        return None
    return UserInputError(MODEL_NOT_ALLOWED.format(model=shown, revision=rules.revision), hint)


async def check_models(agent: AgentClient, models: list[str], *, done: str, one_line: Quote) -> None:
    """Raise :class:`UserInputError` unless every one of ``models`` is allowed (none: no call);
    ``done`` says in the refusal what did not happen (``started``, ``changed``) when the
    enterprise-control history cannot be read (:class:`bot.api.AgentAPIError`); ``one_line`` puts
    the model ids into its words."""
    if not models:
        return
    try:
        rules = await fetch_model_rules(agent)
    except AgentAPIError as exc:
        what, _hint = describe_api_error(exc)
        raise UserInputError(
            CONTROLS_UNREADABLE.format(model=one_line(models[0], 80), what=what), CONTROLS_UNREADABLE_HINT.format(done=done)
        ) from None
    for model in models:
        refusal = model_refusal(rules, model, one_line=one_line)
        if refusal is not None:
            raise refusal
