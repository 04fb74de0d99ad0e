"""``/agent usage``: signed requests dispatched to the bot in-process (``tests/inprocess.py``), which
asks the running sandbox Agent API; replies are read where Slack would get them (response_url)."""

from bot.roles import Role
from bot.services.periods import MAX_RELATIVE_DAYS, PERIOD_HELP
from formatters.blocks import number
from formatters.help import help_message
from formatters.usage import NO_USER_USAGE, NO_USER_USAGE_HINT, UNKNOWN_USER, UNKNOWN_USER_HINT
from handlers.usage import OTHERS_USAGE, OWN_USAGE_HINT
from tests.conftest import TEST_STACK_OPTIONS, api_error_reply, block_texts, error_reply, sandbox_get, set_faults
from tests.inprocess import inprocess_fixture, start_inprocess
from tests.refusals import demo_refusal

stack = inprocess_fixture()


def _billable_total(stack, start, end):
    rows = sandbox_get(stack, "/api/v1/analytics/tokens", startDate=start, endDate=end)["data"]
    return sum(row["billable_tokens"] for row in rows)


def test_usage_7d_reply_carries_the_billable_total_from_the_api(stack, block_kit_validator):
    reply = stack.command("usage 7d", user="U0MANAGER")
    assert reply.status == 200
    payload = block_kit_validator(reply.last)
    total = _billable_total(stack, "2026-11-15", "2026-11-21")
    previous = _billable_total(stack, "2026-11-08", "2026-11-14")
    assert total > 0
    assert f"{number(total)} billable tokens" in payload["text"]
    texts = block_texts(payload)
    assert texts[0] == "Agent usage: 2026-11-15 \u2013 2026-11-21 (7 days)"
    billable_field = next(t for t in texts if t.startswith("*Billable tokens*"))
    assert number(total, compact=True) in billable_field
    pct = abs(total - previous) / previous * 100
    assert f"{pct:.1f}%" in billable_field
    [response] = reply.responses
    assert reply.ack is None and response.response_type == "ephemeral"


def test_usage_defaults_to_yesterday_and_lists_top_users_from_by_user(stack, block_kit_validator):
    payload = block_kit_validator(stack.command("usage", user="U0OWNER").last)
    row = sandbox_get(stack, "/api/v1/analytics/tokens", startDate="2026-11-21", endDate="2026-11-21")["data"][0]
    top = max(row["by_user"], key=lambda u: u["billable_tokens"])
    users_block = next(t for t in block_texts(payload) if t.startswith("*Top users"))
    assert f"1. {top['user_email'] or top['user_id']}: {number(top['billable_tokens'], compact=True)}" in users_block


def test_usage_by_model_sums_the_grouped_rows(stack, block_kit_validator):
    payload = block_kit_validator(stack.command("usage 30d by model").last)
    rows = sandbox_get(stack, "/api/v1/analytics/tokens", startDate="2026-10-23", endDate="2026-11-21", group_by="model")["data"]
    per_model = {}
    for r in rows:
        per_model[r["group_key"]] = per_model.get(r["group_key"], 0) + r["billable_tokens"]
    best = max(per_model, key=per_model.get)
    assert f"1. {best}: {number(per_model[best], compact=True)}" in block_texts(payload)[1]


def test_usage_of_one_user_by_mention_and_unknown_user(stack, block_kit_validator):
    payload = block_kit_validator(stack.command("usage user <@U0OWNER|alice> 7d").last)
    assert block_texts(payload)[0].startswith("Agent usage of alice@example.com")
    missing = stack.command("usage user nobody@example.com 7d")
    assert missing.payloads == [error_reply(UNKNOWN_USER.format(email="nobody@example.com"), UNKNOWN_USER_HINT)]


def test_an_organization_user_without_usage_is_told_apart_from_an_unknown_one(stack):
    day = "2026-11-21"
    used = {
        u["user_email"]
        for row in sandbox_get(stack, "/api/v1/analytics/tokens", startDate=day, endDate=day)["data"]
        for u in row["by_user"]
        if u["user_email"]
    }
    members = [u["email"] for u in sandbox_get(stack, "/api/v0/organization/users", limit="100")["users"] if u.get("email")]
    idle = next(email for email in members if email not in used)
    reply = stack.command(f"usage user {idle} {day}")
    assert reply.payloads == [error_reply(NO_USER_USAGE.format(email=idle, period=f"on {day}"), NO_USER_USAGE_HINT)]
    assert NO_USER_USAGE.format(email="e", period="on 1") == "e is an organization user but did not use the Agent platform on 1."
    week = stack.command(f"usage user {idle} 2026-11-21..2026-11-21")
    assert week.payloads == reply.payloads


def test_malformed_and_out_of_range_periods_say_what_is_allowed(stack):
    for text, says in [
        ("usage 2026-11-22", "data runs through yesterday, 2026-11-21"),
        ("usage 2025-12-01", "data starts 2026-01-14"),
        ("usage lastweek", "I don't understand `lastweek`"),
        ("usage today", "Today's numbers land tomorrow: data runs through yesterday, 2026-11-21 (UTC). Try `yesterday` or `this week`."),
        ("usage last fortnight", "I don't understand `fortnight`"),
        ("usage 7d by colour", "`by` takes one of: model, client, tool, user"),
    ]:
        reply = stack.command(text)
        assert reply.status == 200
        assert says in reply.last["text"], (text, reply.last["text"])


def test_a_member_asking_for_usage_is_refused_and_the_handler_never_runs(stack, caplog):
    reply = stack.command("usage 7d", user="U0MEMBER")
    assert reply.status == 200
    # the refusal is the ack's own body: the middleware answered before any listener ran, and once
    # every task the request started has ended, nothing came on the response_url
    assert reply.ack == demo_refusal("usage", "U0MEMBER")
    assert reply.responses == []
    assert any("refused usage to U0MEMBER" in r.getMessage() for r in caplog.records)


def test_a_guest_gets_help_but_not_usage(stack):
    assert stack.command("usage", user="U0GUEST").ack == demo_refusal("usage", "U0GUEST")
    helped = stack.command("help", user="U0GUEST")
    router, policy = stack.bot.router, stack.bot.services.policy
    guest = [s.name for s in router.specs if policy.minimum(s.policy_key) > Role.guest]
    hidden = {name: policy.minimum(next(s for s in router.specs if s.name == name).policy_key).name for name in guest}
    assert helped.ack is None and "usage" in hidden
    assert helped.payloads == [{**help_message(router.specs, hidden=hidden), "response_type": "ephemeral"}]


def test_sandbox_failing_gives_a_clear_error_and_a_200_ack(stack, faults):
    faults(error_rate=1.0)
    reply = stack.command("usage 7d")
    assert reply.status == 200
    assert reply.payloads == [api_error_reply("server")]


def test_sandbox_hanging_gives_a_timeout_message():
    """A bot of its own with a short Agent API timeout (0.3 s), against hangs just longer than that:
    the same path as with the suite's 2 s, in a fraction of the time (the bound itself is tested in
    tests/bot/api)."""
    hanging = start_inprocess(**{**TEST_STACK_OPTIONS, "api_timeout": 0.3})
    try:
        set_faults(hanging, hang_rate=1.0, hang_seconds=0.6)
        reply = hanging.command("usage")
        assert reply.status == 200
        assert reply.payloads == [api_error_reply("timeout")]
    finally:
        hanging.close()


def test_everyone_sees_their_own_usage_and_only_managers_see_anyones(stack, block_kit_validator):
    own = block_kit_validator(stack.command("usage me 7d", user="U0MEMBER").last)
    assert block_texts(own)[0].startswith("Agent usage of carol@example.com")
    same = stack.command("usage user carol@example.com 7d", user="U0MEMBER")
    assert same.payloads == stack.command("usage user <@U0MEMBER|carol> 7d", user="U0MEMBER").payloads
    assert block_texts(same.last)[0] == block_texts(own)[0]
    other = stack.command("usage user alice@example.com 7d", user="U0MEMBER")
    assert other.payloads == [error_reply(OTHERS_USAGE.format(role="manager"), OWN_USAGE_HINT)]
    assert stack.command("usage me", user="U0GUEST").ack == demo_refusal("usage me", "U0GUEST")


def test_a_period_of_too_many_days_gets_the_same_answer_however_many(stack):
    for text in ("367d", "999999d"):
        reply = stack.command(f"usage {text}", user="U0MANAGER")
        message = f"`{text}` is not a period: N in `Nd` runs from 1 to {MAX_RELATIVE_DAYS}. {PERIOD_HELP}"
        assert reply.payloads == [error_reply(message)]
