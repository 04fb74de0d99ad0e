"""The ``usage`` kind's rules on crafted analytics answers (``httpx`` transport that answers by
request): who spikes, the organization total, what is used for the first time, what the kind reads,
the filters, and a day that has not landed in every answer."""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx
import pytest

from bot.services.alerts import AlertSubscription, FilterError, Pass
from bot.services.alerts.usage import Figure, LandedDay, UsageAlert, UsageKind, select
from formatters.alerts_usage import usage_alert
from tests.api_fakes import (
    FIXED_TODAY,
    RecordingTransport,
    activity_row,
    analytics_envelope,
    fake_client,
    grouped_token_row,
    json_response,
    token_row,
    tool_row,
)

DAY = FIXED_TODAY - dt.timedelta(days=1)  # 2026-02-28
WEEK_START = DAY - dt.timedelta(days=7)
WINDOW_START = DAY - dt.timedelta(days=36)
NOW = dt.datetime.combine(FIXED_TODAY, dt.time(9, 0), tzinfo=dt.UTC)


def days(start: dt.date) -> list[dt.date]:
    return [start + dt.timedelta(days=n) for n in range((DAY - start).days + 1)]


def user(user_id: str, email: str | None, tokens: int | None) -> dict[str, Any]:
    return {"user_id": user_id, "user_email": email, "billable_tokens": tokens, "by_model": []}


def tokens(day: dt.date) -> dict[str, Any]:
    today = day == DAY
    return token_row(
        date=day.isoformat(),
        billable_tokens=12_000_000 if today else 2_000_000,
        by_user=[
            user("u_ann", "ann@example.com", 3_500_000 if today else 1_000_000),  # 3.5x and above 1M
            user("u_bob", "bob@example.com", 900_000 if today else 100_000),  # 9x, but under 1M
            *([user("u_cy", "cy@example.com", 2_000_000)] if today else []),  # nothing before
            user("u_dan", "dan@example.com", None if today else 1_000_000),  # not reported is not a spike
            user("u_eve", None, 5_000_000 if today else 1_000_000),  # no e-mail: shown by user id
        ],
    )


def models(day: dt.date) -> list[dict[str, Any]]:
    rows = [grouped_token_row(date=day.isoformat(), group_key="model-large")]
    if day == DAY:
        rows += [
            grouped_token_row(date=day.isoformat(), group_key="model-new"),
            grouped_token_row(date=day.isoformat(), group_key="model-unused", billable_tokens=0),
        ]
    return rows


def tools(day: dt.date) -> dict[str, Any]:
    servers = [{"server": "github", "invocations": 4}, {"server": "Linear", "invocations": 2}] if day == DAY else [{"server": "GitHub"}]
    return tool_row(date=day.isoformat(), mcp_by_server=servers)


def activity(day: dt.date) -> dict[str, Any]:
    clients = {"terminal-ui": 4, "web": 0, "non-interactive-cli": 2}
    if day == DAY:
        clients |= {"web": 1, "ide-plugin": 2, "voice": 0}
    return activity_row(date=day.isoformat(), daily_active_users_by_client=clients)


class Analytics:
    """Answers the analytics requests from the rows above; ``missing`` names answers without the day."""

    def __init__(self, missing: tuple[str, ...] = ()) -> None:
        self.missing = missing

    def __call__(self, request: httpx.Request) -> httpx.Response:
        endpoint = request.url.path.rsplit("/", 1)[-1]
        params = request.url.params
        start, end = dt.date.fromisoformat(params["startDate"]), dt.date.fromisoformat(params["endDate"])
        lacking = start != end and endpoint + params.get("group_by", "") in self.missing  # the landing check is one day
        span = [d for d in days(start) if d <= end and not (d == DAY and lacking)]
        if endpoint == "tokens" and params.get("group_by") == "model":
            rows = [row for d in span for row in models(d)]
        else:
            build = {"tokens": tokens, "tools": tools, "activity": activity}[endpoint]
            rows = [build(d) for d in span]
        return json_response(analytics_envelope(rows, start_date=start.isoformat(), end_date=end.isoformat()))


def kind(transport: RecordingTransport) -> UsageKind:
    return UsageKind(fake_client(transport), usage_alert, lambda: NOW)


def sub(n: int = 1, filters: dict[str, Any] | None = None, start: str = "2026-02-27") -> AlertSubscription:
    return AlertSubscription(n, "usage", f"C{n}", start, "U0MANAGER", NOW, None, filters or {})


EVALUATED = LandedDay(
    day=DAY,
    users=(
        Figure("u_eve", 5_000_000, 1_000_000),
        Figure("ann@example.com", 3_500_000, 1_000_000),
        Figure("cy@example.com", 2_000_000, 0),
        Figure("bob@example.com", 900_000, 100_000),
    ),
    total=Figure("", 12_000_000, 2_000_000),
    baseline_days=7,
    first_seen_days=36,
    new_models=("model-new",),
    new_clients=("ide-plugin", "web"),
    new_mcp_servers=("Linear",),
    api_calls=4,
)


async def test_a_landed_day_is_read_in_four_requests_and_evaluated():
    transport = RecordingTransport(Analytics())
    assert await kind(transport).evaluate(DAY) == EVALUATED
    asked = sorted((r.url.path.rsplit("/", 1)[-1], r.url.params["startDate"], r.url.params.get("group_by")) for r in transport.requests)
    assert asked == [
        ("activity", WINDOW_START.isoformat(), None),
        ("tokens", WINDOW_START.isoformat(), "model"),
        ("tokens", WEEK_START.isoformat(), None),
        ("tools", WINDOW_START.isoformat(), None),
    ]


@pytest.mark.parametrize(
    ("spike", "minimum", "users", "total"),
    [
        (3.0, 1_000_000, ("u_eve", "ann@example.com", "cy@example.com"), True),
        (4.0, 2_000_000, ("u_eve", "cy@example.com"), True),
        (8.0, 500_000, ("cy@example.com", "bob@example.com"), False),
        (3.0, 100_000_000, (), False),
    ],
)
def test_who_crosses_the_thresholds(spike, minimum, users, total):
    alert = select(EVALUATED, spike, minimum)
    assert [u.name for u in alert.users] == list(users)
    assert (alert.total is not None) == total
    assert (alert.new_models, alert.new_clients, alert.new_mcp_servers) == (("model-new",), ("ide-plugin", "web"), ("Linear",))


async def test_one_pass_alerts_each_subscription_with_its_thresholds_and_moves_the_day():
    transport = RecordingTransport(Analytics())
    subs = [sub(1), sub(2, {"spike": 4.0, "min": 2_000_000}), sub(3, {"spike": 3.0}), sub(4, start="2026-02-28")]
    found = await kind(transport).detect(Pass(subs, {}, NOW))
    assert (found.api_calls, len(transport.requests)) == (5, 5)  # the landing check, then the day's four reads
    assert [m.new for m in found.moves] == ["2026-02-28"] and found.moves[0].old is None
    assert [(d.key, [s.id for s in subs if d.applies(s)]) for d in found.events] == [
        ("usage:2026-02-28", [1, 3]),
        ("usage:2026-02-28", [2]),
    ]
    assert found.events[0].payload == usage_alert(select(EVALUATED, 3.0, 1_000_000))
    assert found.events[1].payload == usage_alert(select(EVALUATED, 4.0, 2_000_000))
    assert await kind(transport).detect(Pass(subs, {"day": "2026-02-28"}, NOW)) == type(found)()  # nothing new, no request
    assert len(transport.requests) == 5


@pytest.mark.parametrize("missing", ["tokens", "tools", "activity", "tokensmodel"])
async def test_a_day_missing_from_one_answer_is_not_evaluated_yet(missing):
    transport = RecordingTransport(Analytics(missing=(missing,)))
    found = await kind(transport).detect(Pass([sub()], {}, NOW))
    assert (found.events, found.moves, found.api_calls) == ([], [], 5)


async def test_the_test_alert_is_the_last_landed_day_with_the_given_thresholds():
    transport = RecordingTransport(Analytics())
    sample = await kind(transport).sample({"min": 100_000_000})
    expected = UsageAlert(DAY, 3.0, 100_000_000, (), None, 7, 36, ("model-new",), ("ide-plugin", "web"), ("Linear",))
    assert sample == usage_alert(expected, test=True)


def test_filters_parse_into_their_values_and_bad_ones_name_the_filter():
    usage = kind(RecordingTransport())
    assert usage.parse_filters({"spike": "4x", "min": "2M"}) == {"spike": 4.0, "min": 2_000_000}
    assert usage.parse_filters({}) == {}
    with pytest.raises(FilterError) as raised:
        usage.parse_filters({"spike": "lots"})
    assert (raised.value.name, str(raised.value)) == ("spike", "`spike=` takes a factor from 1.1x to 100x, e.g. spike=3x or spike=2.5x")
    with pytest.raises(FilterError) as raised:
        usage.parse_filters({"repo": "acme/web"})
    assert str(raised.value) == "`usage` alerts have no filter `repo=`; they take `spike=`, `min=`"
