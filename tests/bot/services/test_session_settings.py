"""bot.services.session_settings: session settings held to the values the platform names and to the
enterprise controls' current limits (the maximum autonomy level, the model policy)."""

from __future__ import annotations

import httpx
import pytest

from bot.api import AgentClient, EnterpriseControlChange, RetryPolicy
from bot.outcomes import Invalid
from bot.services.session_settings import (
    ABOVE_MAXIMUM,
    ABOVE_MAXIMUM_HINT,
    CONTROLS_UNREADABLE,
    MODEL_ALLOWED_HINT,
    MODEL_BLOCKED,
    MODEL_NOT_ALLOWED,
    SETTING_UNREADABLE,
    SETTING_UNREADABLE_HINT,
    VALUE_HINT,
    VALUE_NOT_NAMED,
    CustomModel,
    allowed_models,
    allowed_values,
    autonomy_rank,
    check_session_settings,
    check_settings,
    model_choices,
    rules_of,
    within_maximum,
)
from bot.user_errors import UserInputError


def change(revision: int, **settings) -> EnterpriseControlChange:
    return EnterpriseControlChange.model_validate(
        {
            "revision": revision,
            "settings": settings,
            "user": {"id": "usr_1", "email": "ada@example.com", "name": "Ada"},
            "updatedAt": "2026-02-01T12:30:00Z",
        }
    )


OLD = change(
    1,
    sessionDefaultSettings={"model": "sonnet", "reasoningEffort": "medium", "interactionMode": "auto", "autonomyMode": "normal"},
    maxAutonomyLevel="high",
)
LATEST = change(
    2,
    sessionDefaultSettings={"model": "sonnet", "reasoningEffort": "high", "autonomyLevel": "medium"},
    maxAutonomyLevel="medium",
    mcpAutonomyOverrides={"github": "auto-low", "odd": "not a <value> at all"},
    customModels=[
        {"id": "custom:acme-0", "model": "acme-coder", "displayName": "Acme Coder", "reasoningEffort": "minimal"},
        {"model": "bare", "reasoningEffort": 7},
    ],
    modelPolicy={"allowedModelIds": ["sonnet", "opus", "glm-4-6"], "blockedModelIds": ["glm-4-6"], "allowCustomModels": True},
)
RULES = rules_of([OLD, LATEST])  # any order: the highest revision is the latest


def test_the_rules_take_the_latest_revision_and_the_values_the_whole_history_names():
    assert RULES is not None and RULES.revision == 2 and RULES.max_autonomy_level == "medium"
    assert RULES.named == {
        "reasoningEffort": ("high", "minimal", "medium"),
        "specModeReasoningEffort": ("minimal",),
        "interactionMode": ("auto",),
        "autonomyLevel": ("medium", "auto-low", "high"),  # the odd override is no named value
        "autonomyMode": ("normal",),
    }
    assert RULES.custom == (CustomModel("custom:acme-0", "acme-coder", "Acme Coder"), CustomModel("", "bare"))
    assert RULES.models.custom_models == ("custom:acme-0", "acme-coder", "bare")
    assert rules_of([]) is None


def test_allowed_values_are_the_known_list_then_the_history():
    assert allowed_values(RULES, "reasoningEffort") == ("off", "low", "medium", "high", "minimal")
    assert allowed_values(None, "interactionMode") == ("spec",)
    assert allowed_values(RULES, "interactionMode") == ("spec", "auto")
    assert allowed_values(RULES, "autonomyMode") == ("auto-high", "auto-medium", "auto-low", "spec", "manual", "normal")
    assert allowed_values(RULES, "model") == ()


def test_autonomy_levels_are_ordered_whatever_their_spelling():
    assert [autonomy_rank(v) for v in ("manual", "off", "low", "auto-low", "medium", "auto-medium", "high", "auto-high")] == [
        0,
        0,
        1,
        1,
        2,
        2,
        3,
        3,
    ]
    assert autonomy_rank("spec") is None and autonomy_rank(None) is None
    assert within_maximum(RULES, "autonomyLevel") == ("manual", "low", "medium", "auto-low", "auto-medium")


def test_values_the_platform_names_and_within_the_maximum_pass():
    changes = {
        "reasoningEffort": "minimal",  # a custom model's, in the history
        "specModeReasoningEffort": "off",
        "interactionMode": "auto",
        "autonomyLevel": "auto-medium",  # at the maximum
        "autonomyMode": "spec",  # no level: not compared with the maximum
        "model": "custom:acme-0",
        "specModeModel": "opus",
    }
    assert check_settings(changes, RULES) == []


def test_a_value_the_platform_does_not_name_is_refused_with_the_allowed_ones():
    assert check_settings({"reasoningEffort": "extreme"}, RULES) == [
        Invalid(
            VALUE_NOT_NAMED.format(value="extreme", name="reasoning effort"),
            VALUE_HINT.format(values="`off`, `low`, `medium`, `high`, `minimal`"),
        )
    ]
    [odd] = check_settings({"interactionMode": "`chatty`\nmode"}, None)  # without controls: the known list
    assert odd.message == VALUE_NOT_NAMED.format(value="\u02cbchatty\u02cb mode", name="interaction mode")


def test_an_autonomy_level_above_the_maximum_is_refused_naming_the_maximum_and_what_is_allowed():
    allowed = "`manual`, `low`, `medium`, `auto-low`, `auto-medium`"
    assert check_settings({"autonomyLevel": "high", "autonomyMode": "auto-high"}, RULES) == [
        Invalid(
            ABOVE_MAXIMUM.format(name="autonomy level", value="high", maximum="medium", revision=2),
            ABOVE_MAXIMUM_HINT.format(values=allowed),
        ),
        Invalid(
            ABOVE_MAXIMUM.format(name="autonomy mode", value="auto-high", maximum="medium", revision=2),
            ABOVE_MAXIMUM_HINT.format(values="`auto-medium`, `auto-low`, `spec`, `manual`, `normal`"),
        ),
    ]
    assert check_settings({"autonomyLevel": "high"}, rules_of([OLD])) == []  # the maximum was high then
    assert check_settings({"autonomyLevel": "high"}, None) == []  # no controls, no maximum


def test_a_maximum_outside_the_known_order_is_not_enforced():
    odd = rules_of([change(3, maxAutonomyLevel="ultra")])
    assert check_settings({"autonomyLevel": "auto-high"}, odd) == []


def test_models_are_checked_against_the_model_policy():
    # each custom model once, by its id (else its model), with its display name (issue #29's second trial)
    hint = MODEL_ALLOWED_HINT.format(models="`sonnet`, `opus`, `glm-4-6`, `custom:acme-0` (Acme Coder), `bare`")
    assert check_settings({"model": "gpt-9", "specModeModel": "glm-4-6"}, RULES) == [
        Invalid(MODEL_NOT_ALLOWED.format(model="gpt-9", revision=2), hint),
        Invalid(MODEL_BLOCKED.format(model="glm-4-6", revision=2), hint),
    ]
    assert check_settings({"model": "anything"}, None) == []


def test_allowed_models_for_the_forms_select():
    assert allowed_models(RULES) == ["sonnet", "opus", "custom:acme-0", "bare"]  # glm-4-6 is blocked
    assert model_choices(RULES) == [("sonnet", "sonnet"), ("opus", "opus"), ("custom:acme-0", "Acme Coder"), ("bare", "bare")]
    assert allowed_models(None) == [] and allowed_models(rules_of([change(1, modelPolicy={"allowedModelIds": []})])) == []


def client_of(handler) -> AgentClient:
    return AgentClient(base_url="http://agent.test", api_key="k", transport=httpx.MockTransport(handler), retry=RetryPolicy(max_attempts=1))


def history(*changes: EnterpriseControlChange):
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        body = [c.model_dump(mode="json", by_alias=True) for c in changes]
        return httpx.Response(200, json={"changes": body, "pagination": {"hasMore": False}})

    return handler, requests


async def test_the_check_reads_one_page_of_history_only_when_something_is_checked():
    handler, requests = history(LATEST, OLD)
    agent = client_of(handler)
    await check_session_settings(agent, {}, done="changed")
    await check_session_settings(agent, {"tags": "x"}, done="changed")
    assert requests == []
    with pytest.raises(UserInputError) as refused:
        await check_session_settings(agent, {"reasoningEffort": "extreme", "autonomyLevel": "high"}, done="changed")
    assert refused.value.message == " ".join(
        (
            VALUE_NOT_NAMED.format(value="extreme", name="reasoning effort"),
            ABOVE_MAXIMUM.format(name="autonomy level", value="high", maximum="medium", revision=2),
        )
    )
    assert [r.url.params["limit"] for r in requests] == ["100"]
    await check_session_settings(agent, {"autonomyLevel": "low"}, done="changed")
    await agent.aclose()


async def test_unreadable_controls_refuse_with_what_failed():
    agent = client_of(lambda request: httpx.Response(500, json={"error": "boom"}))
    with pytest.raises(UserInputError) as refused:
        await check_session_settings(agent, {"autonomyLevel": "low"}, done="changed")
    assert refused.value.message.startswith(SETTING_UNREADABLE.format(name="autonomy level", value="low", what="")[:60])
    assert refused.value.hint == SETTING_UNREADABLE_HINT.format(done="changed")
    with pytest.raises(UserInputError) as model:
        await check_session_settings(agent, {"autonomyLevel": "low", "model": "m"}, done="started")
    assert model.value.message.startswith(CONTROLS_UNREADABLE.format(model="m", what="")[:60])
    await agent.aclose()


def test_refusals_name_a_setting_in_words_not_its_camel_case_key():
    [value] = check_settings({"reasoningEffort": "extreme"}, RULES)
    assert value.message == "The platform names no reasoning effort `extreme`."
    [above] = check_settings({"autonomyLevel": "high"}, RULES)
    assert above.message == (
        "The autonomy level `high` is above your organization's maximum autonomy level, `medium` (enterprise controls, revision 2)."
    )
    [spec] = check_settings({"specModeReasoningEffort": "extreme"}, None)
    assert spec.message == "The platform names no spec mode reasoning effort `extreme`."
