"""Two ``agent-bot serve`` replicas on one PostgreSQL database: every delivery, re-delivered to the
other replica as a Slack retry, has its side effect once.

Slack sends a request to one replica (a load balancer picks), times out, and re-sends the same body
with ``X-Slack-Retry-Num: 1``, which lands on the other. Commands, clicks, mentions and thread
replies alternate between the two replicas; each is re-delivered to the other one. Side effects are
counted on the sandbox's side: sessions started, user messages that reached the agent, install-deps
retries of a computer, and replies posted to a command's response_url.

Needs PostgreSQL (``AGENT_BOT_TEST_POSTGRES_URL``, default database ``test`` on 127.0.0.1); skipped
when it is not reachable. The bot's tables are dropped first, so the replicas start from nothing.
"""

from __future__ import annotations

import time

import pytest

from bot.middleware import HELD_STATUS, delivery_key
from bot.stack import DEMO_CHANNEL, ROLES_YAML, demo_directory
from formatters.computers import ALREADY_RETRYING, RETRY_ACTION
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import SlackEmulator, SlackRequest
from tests.bot.bot_processes import bot_environment, start_serve
from tests.conftest import block_texts, postgres_url

LEGACY = "cmp-legacy-build"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    """``(sandbox state, emulator, [replica A, replica B], [client A, client B])``."""
    url = postgres_url(upgraded=True)  # as `agent-bot db upgrade` leaves it before replicas start
    tmp = tmp_path_factory.mktemp("replicas")
    config = SandboxConfig(seed=7, users=40, reply_delay_seconds=0.05)  # the agent answers at once: the follower's tick is the wait
    sandbox_app = create_app(config)
    sandbox = serve_in_thread(sandbox_app)
    slack = SlackEmulator(directory=demo_directory()).start()
    roles = tmp / "roles.yaml"
    roles.write_text(ROLES_YAML)
    env = bot_environment(slack, agent_api_url=sandbox.url, agent_api_key=config.api_key, database_url=url, roles_file=roles)
    bots = []
    try:
        for name in ("a", "b"):  # one after the other, as a rolling deploy starts them
            bots.append(start_serve(env, tmp / f"replica-{name}.log"))
        clients = [slack.client(bot.url, timeout=20) for bot in bots]
        yield sandbox_app.state.sandbox, slack, bots, clients
    finally:
        for bot in bots:
            bot.stop()
        slack.stop()
        sandbox.stop()


def user_messages(session) -> list[str]:
    return [m["content"][0]["text"] for m in list(session.messages) if m["role"] == "user"]


def sessions_with(state, prompt: str) -> list:
    return [s for s in list(state.sessions.sessions.values()) if any(prompt in t for t in user_messages(s))]


def bot_answers(slack, thread_ts: str) -> list:
    bot_user = slack.directory.bot.user_id
    return [
        m
        for m in slack.recorder.messages(DEMO_CHANNEL, thread_ts=thread_ts)
        if m.user == bot_user and "You asked" in " ".join(block_texts(m.as_payload()))
    ]


def dropped(slack, replica, request: SlackRequest, what: str) -> None:
    """Wait (bounded) until ``replica`` logged that it answered the retry of ``request`` without
    processing it: the de-duplication middleware decides before the ack, so no listener ran."""
    line = f"duplicate delivery {delivery_key(request.payload)} (retry 1) answered without processing"
    slack.recorder.wait_for(lambda: line in replica.log_text(), timeout=10, what=f"the retry of {what} dropped")


def retried(client, request: SlackRequest, **delivery) -> int:
    """Slack's retries of ``request`` on ``client``'s replica: ``503`` while the other replica still
    holds the delivery's claim (:data:`bot.middleware.HELD_STATUS`: Slack sends it again later), then
    ``200`` once that one is done; returns the status of the first retry. Bounded: the other replica
    finishes in well under the delivery lease, so no retry here ever takes its claim over."""
    first = status = client.send(request, **delivery).status_code
    deadline = time.monotonic() + 10
    while status == HELD_STATUS:
        assert time.monotonic() < deadline, "the other replica never finished the delivery"
        time.sleep(0.05)
        status = client.send(request, **delivery).status_code
    assert first in (200, HELD_STATUS) and status == 200
    return first


def parent_of(slack, prompt: str) -> list:
    bot_user = slack.directory.bot.user_id
    return [
        m
        for m in slack.recorder.messages(DEMO_CHANNEL)
        if m.user == bot_user and not m.is_reply and any(prompt in t for t in block_texts(m.as_payload()))
    ]


def test_every_delivery_retried_on_the_other_replica_has_its_side_effect_once(replicas):
    state, slack, bots, clients = replicas
    bot_user = slack.directory.bot.user_id

    # commands: one reply per command, whichever replica got the retry
    for i, text in enumerate(("help usage", "usage 7d", "computers", "sessions")):
        first, other = clients[i % 2], clients[(i + 1) % 2]
        sent = first.send_slash_command(text, user_id="U0MANAGER", channel_id=DEMO_CHANNEL)
        assert sent.status_code == 200
        retried(other, sent.request, retry_num=1, retry_reason="http_timeout")
        dropped(slack, bots[(i + 1) % 2], sent.request, text)
        [_reply] = slack.recorder.wait_for(lambda sent=sent: slack.recorder.responses(sent.response_url_id), timeout=20, what=text)

    # session starts: one session each
    for i, prompt in enumerate(("replica prompt one", "replica prompt two")):
        first, other = clients[i % 2], clients[(i + 1) % 2]
        sent = first.send_slash_command(f"session start computer=ci {prompt}", user_id="U0MEMBER", channel_id=DEMO_CHANNEL)
        retried(other, sent.request, retry_num=1)
        dropped(slack, bots[(i + 1) % 2], sent.request, prompt)
        slack.recorder.wait_for(lambda prompt=prompt: sessions_with(state, prompt), timeout=20, what=prompt)

    # a mention: app_mention to A, its message twin to B, each retried on the other
    mention = clients[0].send_mention(
        f"<@{bot_user}> computer=ci replica mention", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, as_message_too=False
    )
    twin = {**mention.request.payload["event"], "type": "message"}
    message = clients[1].send_event(twin)
    retried(clients[1], mention.request, retry_num=1)
    retried(clients[0], message.request, retry_num=1)
    dropped(slack, bots[1], mention.request, "the app_mention")
    dropped(slack, bots[0], message.request, "the message twin")
    mention_ts = twin["ts"]
    [mentioned] = slack.recorder.wait_for(lambda: sessions_with(state, "replica mention"), timeout=20, what="the mention's session")
    slack.recorder.wait_for(lambda: bot_answers(slack, mention_ts), timeout=20, what="the answer in the mention's thread")

    # thread replies: to A then B, each retried on the other
    for i, words in enumerate(("first replica reply", "second replica reply")):
        first, other = clients[i % 2], clients[(i + 1) % 2]
        reply = first.send_message(words, user_id="U0MEMBER", channel_id=DEMO_CHANNEL, thread_ts=mention_ts)
        retried(other, reply.request, retry_num=1)
        dropped(slack, bots[(i + 1) % 2], reply.request, words)
        slack.recorder.wait_for(lambda i=i: len(bot_answers(slack, mention_ts)) >= i + 2, timeout=20, what=words)

    # a Retry install click on B, retried on A
    computer = state.fleet.get(LEGACY)
    generation = computer.generation
    listing = clients[1].send_slash_command("computers", user_id="U0MANAGER", channel_id=DEMO_CHANNEL)
    [shown] = slack.recorder.wait_for(lambda: slack.recorder.responses(listing.response_url_id), timeout=20, what="computers")
    message_ts = "1700000000.000200"
    click = clients[1].send_block_action(
        RETRY_ACTION,
        user_id="U0MANAGER",
        channel_id=DEMO_CHANNEL,
        message_ts=message_ts,
        message={"type": "message", "ts": message_ts, "text": shown.text, "blocks": shown.blocks},
    )
    retried(clients[0], click.request, retry_num=1)
    dropped(slack, bots[0], click.request, "the Retry click")
    slack.recorder.wait_for(lambda: slack.recorder.responses(click.response_url_id), timeout=20, what="the click's update")

    # every retry above was dropped before its ack (no listener ran for it), so what is posted now
    # is all there will be; the two started sessions' answers are waited for, then everything counted
    for prompt in ("replica prompt one", "replica prompt two"):
        slack.recorder.wait_for(
            lambda prompt=prompt: (parents := parent_of(slack, prompt)) and bot_answers(slack, parents[0].ts), timeout=20, what=prompt
        )
    for prompt in ("replica prompt one", "replica prompt two", "replica mention"):
        assert len(sessions_with(state, prompt)) == 1, prompt
    assert user_messages(mentioned) == ["replica mention", "first replica reply", "second replica reply"]
    assert len(bot_answers(slack, mention_ts)) == 3
    assert computer.generation == generation + 1
    assert not [r for r in slack.recorder.responses(click.response_url_id) if ALREADY_RETRYING.split("{")[0] in r.text]
    for prompt in ("replica prompt one", "replica prompt two"):
        parents = parent_of(slack, prompt)
        assert len(parents) == 1, prompt
        assert len(bot_answers(slack, parents[0].ts)) == 1, prompt
    # both replicas did work and both dropped retries
    logs = [bot.log_text() for bot in bots]
    assert all("duplicate delivery" in log for log in logs)
