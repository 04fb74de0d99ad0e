"""``GET /metrics`` (bot/metrics.py) scraped from the bot served on loopback after real requests: the
sandbox Agent API and the Slack emulator answer them. Each test installs fresh metrics, so its values
are exact; lines are compared whole."""

from __future__ import annotations

import asyncio
import re
import time

import httpx
import pytest

from bot import metrics
from bot.api import AgentClient
from bot.metrics import Metrics, endpoint_of
from bot.slack import SlackFailure, SlackGateway, web_client
from bot.stack import DEMO_CHANNEL
from tests.conftest import wait_claim_done

METRIC_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
BOUNDED_VALUE = re.compile(
    r"[a-z_]+"  # kinds, outcomes, error codes, transport_error, other
    r"|[A-Z]+"  # HTTP methods
    r"|[1-5][0-9]{2}"  # HTTP status
    r"|/api(/[a-z0-9-]+|/\{[a-zA-Z]+\})+"  # route templates: fixed segments and {placeholders} only
    r"|[a-z]+(\.[A-Za-z]+)+"  # Slack method names
    r"|[0-9.]+|\+Inf"  # histogram bucket bounds (le)
)


@pytest.fixture(scope="module", autouse=True)
def no_background_sync():
    """The served stack's bot without the analytics store's sync job (issue #30), whose start-up
    backfill would add its own Agent API calls to the counts these tests compare."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_BOT_ANALYTICS_BACKFILL_DAYS", "0")
        yield


@pytest.fixture
def fresh():
    previous = metrics.install(Metrics.create())
    yield
    metrics.install(previous)


def scrape(stack) -> list[str]:
    answer = httpx.get(f"{stack.bot_url}/metrics", timeout=10)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return answer.text.splitlines()


def lines_of(lines: list[str], name: str) -> set[str]:
    """The sample lines of ``name`` (its exact sample name, e.g. ``..._total`` or ``..._count``)."""
    return {line for line in lines if (m := METRIC_LINE.match(line)) and m["name"] == name}


def labels_of(lines: list[str]) -> list[tuple[str, str]]:
    return [
        pair for line in lines if not line.startswith("#") and (m := METRIC_LINE.match(line)) for pair in LABEL.findall(m["labels"] or "")
    ]


def _sandbox_log(stack, method: str = "GET") -> list[dict]:
    answer = httpx.request(method, f"{stack.sandbox.url}/_sandbox/requests", timeout=10)
    answer.raise_for_status()
    return answer.json().get("requests", []) if method == "GET" else []


def test_a_command_counts_its_request_its_ack_and_its_agent_api_calls(stack, fresh):
    _sandbox_log(stack, "DELETE")
    reply = stack.command("usage 7d", user="U0MANAGER")
    assert reply.status == 200
    lines = scrape(stack)
    # /tokens for days not stored is asked in pieces (sized by the users per day the store saw, a day
    # at a time for the previous week's totals while it saw none): as many calls as the sandbox logged
    tokens = sum(1 for entry in _sandbox_log(stack) if entry["path"] == "/api/v1/analytics/tokens")
    assert tokens >= 2
    assert lines_of(lines, "agent_bot_slack_requests_total") == {'agent_bot_slack_requests_total{kind="command",outcome="acked"} 1.0'}
    assert lines_of(lines, "agent_bot_slack_ack_seconds_count") == {'agent_bot_slack_ack_seconds_count{kind="command"} 1.0'}
    assert 'agent_bot_slack_ack_seconds_bucket{kind="command",le="+Inf"} 1.0' in lines
    # usage 7d: each other analytics endpoint for the week and for the week before, and the organization's
    # users once (the sandbox's top users include people analytics sends without an e-mail)
    assert lines_of(lines, "agent_bot_agent_api_calls_total") == {
        *(
            f'agent_bot_agent_api_calls_total{{endpoint="/api/v1/analytics/{name}",method="GET",status="200"}} 2.0'
            for name in ("tools", "activity", "productivity")
        ),
        f'agent_bot_agent_api_calls_total{{endpoint="/api/v1/analytics/tokens",method="GET",status="200"}} {tokens}.0',
        'agent_bot_agent_api_calls_total{endpoint="/api/v0/organization/users",method="GET",status="200"} 1.0',
    }
    assert lines_of(lines, "agent_bot_agent_api_call_seconds_count") == {
        *(
            f'agent_bot_agent_api_call_seconds_count{{endpoint="/api/v1/analytics/{name}",method="GET"}} 2.0'
            for name in ("tools", "activity", "productivity")
        ),
        f'agent_bot_agent_api_call_seconds_count{{endpoint="/api/v1/analytics/tokens",method="GET"}} {tokens}.0',
        'agent_bot_agent_api_call_seconds_count{endpoint="/api/v0/organization/users",method="GET"} 1.0',
    }
    rss = [line for line in lines if line.startswith("process_resident_memory_bytes ")]
    assert len(rss) == 1 and float(rss[0].split()[1]) > 10_000_000


def test_agent_api_calls_are_counted_by_route_template_never_by_raw_path(stack, fresh):
    async def calls() -> None:
        agent = AgentClient(base_url=stack.sandbox.url, api_key="sandbox-owner-key")
        try:
            for session_id in ("sess-4711", "sess-4712"):
                with pytest.raises(Exception, match="404"):
                    await agent.get_session(session_id=session_id)
        finally:
            await agent.aclose()

    asyncio.run(calls())
    lines = scrape(stack)
    assert lines_of(lines, "agent_bot_agent_api_calls_total") == {
        'agent_bot_agent_api_calls_total{endpoint="/api/v0/sessions/{sessionId}",method="GET",status="404"} 2.0'
    }
    assert not any("sess-471" in line for line in lines)


def test_a_slack_failure_is_counted_by_method_and_error_code(stack, fresh):
    stack.slack.web_api.fail_next("chat.postMessage", "channel_not_found")

    async def post() -> SlackFailure | object:
        gateway = SlackGateway(web_client(stack.slack.bot_token, stack.slack.api_url))
        return await gateway.post("C0GONE", {"text": "hello"})

    failure = asyncio.run(post())
    assert isinstance(failure, SlackFailure) and failure.error == "channel_not_found"
    assert lines_of(scrape(stack), "agent_bot_slack_api_errors_total") == {
        'agent_bot_slack_api_errors_total{error="channel_not_found",method="chat.postMessage"} 1.0'
    }


def test_a_request_refused_before_bolt_and_a_duplicate_delivery_are_counted(stack, fresh):
    forged = httpx.post(
        f"{stack.bot_url}/slack/events",
        content="command=%2Fagent&text=help",
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": str(int(time.time())),
            "X-Slack-Signature": "v0=" + "0" * 64,
        },
    )
    assert forged.status_code == 401
    first = stack.client.send_slash_command("help", user_id="U0MANAGER", channel_id=DEMO_CHANNEL)
    wait_claim_done(stack, f"command:{first.request.payload['trigger_id']}")  # before: the retry is answered 503 (held)
    again = stack.client.send(first.request, retry_num=1)
    assert (first.status_code, again.status_code) == (200, 200)
    lines = scrape(stack)
    assert lines_of(lines, "agent_bot_slack_requests_total") == {
        'agent_bot_slack_requests_total{kind="unparsed",outcome="refused"} 1.0',
        'agent_bot_slack_requests_total{kind="command",outcome="acked"} 2.0',
    }
    assert lines_of(lines, "agent_bot_claim_conflicts_total") == {'agent_bot_claim_conflicts_total{claim="delivery"} 1.0'}


def test_no_label_carries_an_id_or_free_text(stack, fresh):
    stack.command("usage 7d", user="U0MANAGER")
    stack.command("computers", user="U0MANAGER")
    stack.command("no such sub-command <@U0MANAGER> & text", user="U0MANAGER")
    stack.slack.web_api.fail_next("chat.update", "message_not_found")
    metrics.slack_api_error("chat.update", "weird error with spaces and U0MANAGER")  # free text from a future caller
    metrics.agent_api_call("GET", "/api/v0/sessions/sess-1/messages/msg-2", 200, 0.1)
    metrics.agent_api_call("GET", "/api/v9/unknown/U0MANAGER", 500, 0.1)
    metrics.credit_limit_decision("something else")
    pairs = labels_of(scrape(stack))
    assert pairs, "the scrape has labelled samples"
    unbounded = [(name, value) for name, value in pairs if not BOUNDED_VALUE.fullmatch(value)]
    assert unbounded == []
    values = {value for _name, value in pairs}
    assert {"other", "/api/v0/sessions/{sessionId}/messages/{messageId}"} <= values
    assert not {v for v in values if re.search(r"U0|C0|sess-|msg-", v)}


def test_the_other_metrics_count_exact_values(fresh):
    metrics.relay_lag(3.5)
    metrics.relay_lag(-2.0)  # a clock behind the API's: counted as no lag
    metrics.digest_posted()
    metrics.credit_limit_decision("applied")
    metrics.credit_limit_decision("rejected")
    metrics.credit_limit_decision("rejected")
    metrics.session_polled()
    lines = metrics.render().decode().splitlines()
    assert lines_of(lines, "agent_bot_session_relay_lag_seconds_bucket") == {
        f'agent_bot_session_relay_lag_seconds_bucket{{le="{le}"}} {n}'
        for le, n in {
            "1.0": "1.0",
            "2.0": "1.0",
            **dict.fromkeys(("5.0", "10.0", "30.0", "60.0", "120.0", "300.0", "900.0", "+Inf"), "2.0"),
        }.items()
    }
    assert lines_of(lines, "agent_bot_session_relay_lag_seconds_sum") == {"agent_bot_session_relay_lag_seconds_sum 3.5"}
    assert lines_of(lines, "agent_bot_digests_posted_total") == {"agent_bot_digests_posted_total 1.0"}
    assert lines_of(lines, "agent_bot_session_polls_total") == {"agent_bot_session_polls_total 1.0"}
    assert lines_of(lines, "agent_bot_credit_limit_decisions_total") == {
        'agent_bot_credit_limit_decisions_total{outcome="applied"} 1.0',
        'agent_bot_credit_limit_decisions_total{outcome="rejected"} 2.0',
    }


@pytest.mark.parametrize(
    ("path", "template"),
    [
        ("/api/v0/sessions", "/api/v0/sessions"),
        ("/api/v0/sessions/abc%2F1", "/api/v0/sessions/{sessionId}"),
        ("/api/v0/sessions/abc/messages", "/api/v0/sessions/{sessionId}/messages"),
        ("/api/v0/sessions/abc/messages/m1", "/api/v0/sessions/{sessionId}/messages/{messageId}"),
        ("/api/v0/computers/c1/install-deps", "/api/v0/computers/{computerId}/install-deps"),
        ("/api/v1/analytics/users", "/api/v1/analytics/users"),
        ("/api/organization/maturity-level-reports", "/api/organization/maturity-level-reports"),
        ("/api/v0/sessions/a/b/c/d", "other"),
        ("/anything/else", "other"),
    ],
)
def test_endpoint_of_gives_the_specs_route_template(path, template):
    assert endpoint_of(path) == template


def test_socket_modes_listener_answers_metrics_and_hooks_on_one_port(stack, fresh):
    metrics.digest_posted()

    async def get() -> tuple[int, str, int]:
        app = stack.bot.metrics_asgi(hooks=True)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://listener") as client:
            scraped = await client.get("/metrics")
            hook = await client.post("/hooks/agent", content=b"{}")
        return scraped.status_code, scraped.text, hook.status_code

    status, text, hook_status = asyncio.run(get())
    assert status == 200 and "agent_bot_digests_posted_total 1.0" in text.splitlines()
    assert hook_status == 401  # the hook route is there (an unsigned delivery is refused)
