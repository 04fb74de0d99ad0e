"""Whether a model a person asks for is one the enterprise controls allow: the names this module
always had, kept for its callers; the rules and their words live in :mod:`bot.services.session_settings`
(which checks every session setting, the models among them, before the Agent API is called).

The rules are those of the latest enterprise-control revision (management-api-v0.md, "Settings
snapshot", ``modelPolicy``): see :mod:`bot.services.session_settings`, "Models".
"""

from __future__ import annotations

from collections.abc import Callable

from bot.api import AgentClient
from bot.services.controls import ModelRules
from bot.services.session_settings import (
    CONTROLS_UNREADABLE,
    CONTROLS_UNREADABLE_HINT,
    MODEL_ALLOWED_HINT,
    MODEL_BLOCKED,
    MODEL_NONE_ALLOWED_HINT,
    MODEL_NOT_ALLOWED,
    MODELS_SHOWN,
    allowed_model_list,
    check_session_settings,
    model_invalid,
)
from bot.user_errors import UserInputError

Quote = Callable[[object, int], str]
"""Puts an API or user value into the words of a reason: escaped for mrkdwn, on one line, cut to
the limit (:meth:`bot.services.sessions.messages.SessionMessages.one_line`, handed in at wiring)."""

__all__ = [
    "CONTROLS_UNREADABLE",
    "CONTROLS_UNREADABLE_HINT",
    "MODELS_SHOWN",
    "MODEL_ALLOWED_HINT",
    "MODEL_BLOCKED",
    "MODEL_NONE_ALLOWED_HINT",
    "MODEL_NOT_ALLOWED",
    "Quote",
    "allowed_list",
    "check_models",
    "model_refusal",
]


def allowed_list(rules: ModelRules) -> str:
    """The allowed models (the allowed ids, then the custom models), at most :data:`MODELS_SHOWN`."""
    return allowed_model_list(rules)


def model_refusal(rules: ModelRules | None, model: str) -> UserInputError | None:
    """Why ``model`` may not be used under ``rules``, or None (:func:`bot.services.session_settings.model_invalid`)."""
    found = model_invalid(rules, model)
    return None if found is None else UserInputError(found.message, found.hint)


async def check_models(agent: AgentClient, models: list[str], *, done: str) -> None:
    """Raise :class:`UserInputError` unless every one of ``models`` is allowed (none: no call); as
    :func:`bot.services.session_settings.check_session_settings` with each as a ``model``."""
    for model in models:
        await check_session_settings(agent, {"model": model}, done=done)
