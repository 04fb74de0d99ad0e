"""bot.services.sessions.models: a model asked for, against the latest enterprise controls' lists."""

from __future__ import annotations

from bot.services.controls import ModelPolicySummary, ModelRules
from bot.services.sessions.models import (
    MODEL_ALLOWED_HINT,
    MODEL_BLOCKED,
    MODEL_NONE_ALLOWED_HINT,
    MODEL_NOT_ALLOWED,
    allowed_list,
    model_refusal,
)

RULES = ModelRules(
    16,
    ModelPolicySummary(allowed_model_ids=("sonnet", "opus"), blocked_model_ids=("glm-4-6",), allow_custom_models=True),
    ("custom:acme-0", "acme-coder"),
)
ALLOWED = "`sonnet`, `opus`, `custom:acme-0`, `acme-coder`"


def refusal(rules, model):
    found = model_refusal(rules, model)
    return None if found is None else (found.message, found.hint)


def test_an_allowed_or_custom_model_passes():
    assert [refusal(RULES, m) for m in ("sonnet", "custom:acme-0", "acme-coder")] == [None, None, None]


def test_a_model_not_in_the_allowed_list_or_blocked_is_refused_with_the_allowed_list():
    assert refusal(RULES, "gpt-9") == (MODEL_NOT_ALLOWED.format(model="gpt-9", revision=16), MODEL_ALLOWED_HINT.format(models=ALLOWED))
    assert refusal(RULES, "glm-4-6") == (MODEL_BLOCKED.format(model="glm-4-6", revision=16), MODEL_ALLOWED_HINT.format(models=ALLOWED))
    assert refusal(RULES, "<!channel>") == (
        MODEL_NOT_ALLOWED.format(model="&lt;!channel&gt;", revision=16),
        MODEL_ALLOWED_HINT.format(models=ALLOWED),
    )


def test_without_an_allowed_list_only_a_blocked_model_is_refused_and_without_controls_nothing():
    open_policy = ModelRules(3, ModelPolicySummary(allowed_model_ids=(), blocked_model_ids=("glm-4-6",)))
    assert refusal(open_policy, "gpt-9") is None
    assert refusal(open_policy, "glm-4-6") == (MODEL_BLOCKED.format(model="glm-4-6", revision=3), MODEL_NONE_ALLOWED_HINT)
    assert refusal(ModelRules(3, ModelPolicySummary()), "anything") is None
    assert refusal(None, "anything") is None  # no revision: no controls were ever set


def test_a_long_allowed_list_is_shortened():
    many = ModelRules(1, ModelPolicySummary(allowed_model_ids=tuple(f"m{n}" for n in range(9))))
    assert allowed_list(many) == "`m0`, `m1`, `m2`, `m3`, `m4`, `m5` and 3 more"
