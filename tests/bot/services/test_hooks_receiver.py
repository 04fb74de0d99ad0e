"""``HookReceiver`` (bot/services/hooks.py) in-process: its explicit dependencies are fakes (the
sessions feature, the gateway, the identity), except the claim keys, which live in a real SQLite
database so that "once per delivery" is shown as the database fact it is."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.hooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, TOKEN_ID_HEADER, sign, token_id_of, token_key
from bot.services.hook_tokens import HookTokens
from bot.services.hooks import NO_TOKEN, NOT_YOUR_DM, NOT_YOUR_SESSION, UNKNOWN_TOKEN, HookReceiver
from bot.slack import Posted, SlackFailure
from bot.store import Store
from formatters import sessions as session_messages
from formatters.sessions import hook_dm, hook_note

SECRET = "hook-secret"
NOW = dt.datetime(2026, 11, 22, 7, 0, tzinfo=dt.UTC)
"""The receiver's clock: far from the wall clock, so a signature checked against it shows the clock is injected."""


@dataclass(frozen=True)
class Link:
    """The two fields of a session row the receiver reads."""

    id: int
    slack_user: str


@dataclass
class FakeSessions:
    """The sessions feature: ``store`` and ``follower`` are this object, recording each call."""

    links: dict[str, Link] = field(default_factory=dict)
    polled_ok: bool = True
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    @property
    def store(self) -> FakeSessions:
        return self

    @property
    def follower(self) -> FakeSessions:
        return self

    async def by_session_id(self, session_id: str) -> Link | None:
        return self.links.get(session_id)

    async def wake(self, row_id: int, now: dt.datetime, *, hooks: bool | None = None) -> None:
        self.calls.append(("wake", row_id, now, hooks))

    async def stop_following(self, row_id: int, *, archived: bool = False) -> None:
        self.calls.append(("stop_following", row_id, archived))

    async def post_in_thread(self, link: Link, payload: dict[str, Any]) -> None:
        self.calls.append(("post_in_thread", link.id, payload))

    async def poll_now(self, row_id: int) -> bool:
        self.calls.append(("poll_now", row_id))
        return self.polled_ok


POSTED = Posted("D0MEMBER", "1.000001")


@dataclass
class FakeSlack:
    answer: Posted | SlackFailure = POSTED
    posts: list[tuple[str, Any]] = field(default_factory=list)

    async def post(self, channel: str, payload: Any) -> Posted | SlackFailure:
        self.posts.append((channel, payload))
        return self.answer


class FakeIdentity:
    async def user_of_email(self, email: str) -> str | None:
        return {"carol@example.com": "U0MEMBER"}.get(email)


@pytest.fixture
def database(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'hooks.db'}"


@pytest.fixture
def store(database: str):
    opened = Store(database)
    yield opened
    opened.close()


def receiver(
    store: Store, sessions: FakeSessions | None = None, slack: FakeSlack | None = None, secret: str | None = SECRET
) -> HookReceiver:
    return HookReceiver(
        store=store,
        sessions=sessions or FakeSessions(),
        slack=slack or FakeSlack(),  # type: ignore[arg-type]
        messages=session_messages,
        identity=FakeIdentity(),  # type: ignore[arg-type]
        secret=secret,
        now=lambda: NOW,
    )


def signed(event: dict[str, Any], *, at: dt.datetime = NOW, secret: str = SECRET) -> tuple[dict[str, str], bytes]:
    body = json.dumps(event).encode()
    stamp = str(int(at.timestamp()))
    return {TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: sign(secret, stamp, body)}, body


def claim_key(headers: dict[str, str], body: bytes) -> str:
    """The store key of a delivery: ``hook:`` + SHA-256 of its timestamp and body."""
    return "hook:" + hashlib.sha256(headers[TIMESTAMP_HEADER].encode() + b":" + body).hexdigest()


async def settle(hooks: HookReceiver) -> None:
    """Wait for the background polls the receiver started."""
    await asyncio.gather(*list(hooks._background))


NOTIFICATION = {"hook_event_name": "Notification", "session_id": "s-1", "cwd": "~/web", "message": "Allow `rm`?"}


async def test_without_a_secret_hooks_are_off(store):
    headers, body = signed(NOTIFICATION)
    assert await receiver(store, secret=None).receive(headers, body) == (
        503,
        {"error": "hooks are not configured on this bot (AGENT_BOT_HOOK_SECRET)"},
    )


async def test_wrong_stale_and_missing_signatures_are_refused_before_anything_is_claimed(store):
    sessions = FakeSessions({"s-1": Link(7, "U0MEMBER")})
    hooks = receiver(store, sessions)
    refused = (401, {"error": "missing, stale or wrong signature"})
    assert await hooks.receive(*signed(NOTIFICATION, secret="another")) == refused
    assert await hooks.receive(*signed(NOTIFICATION, at=NOW - dt.timedelta(minutes=6))) == refused
    assert await hooks.receive({}, signed(NOTIFICATION)[1]) == refused
    assert sessions.calls == []
    headers, body = signed(NOTIFICATION)
    assert not await store.was_claimed(claim_key(headers, body))
    assert await hooks.receive(headers, body) == (200, {"status": "posted to the session's thread"})
    assert await store.was_claimed(claim_key(headers, body))
    await settle(hooks)


async def test_bad_bodies_are_400(store):
    hooks = receiver(store)
    assert await hooks.receive(*signed({"hook_event_name": "Stop"})) == (
        400,
        {"error": "a hook event needs hook_event_name and session_id strings"},
    )
    stamp = str(int(NOW.timestamp()))
    raw = b"{not json"
    assert await hooks.receive({TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: sign(SECRET, stamp, raw)}, raw) == (
        400,
        {"error": "body is not JSON"},
    )


async def test_a_notification_of_a_followed_session_goes_into_its_thread_then_a_poll(store):
    sessions = FakeSessions({"s-1": Link(7, "U0MEMBER")})
    hooks = receiver(store, sessions)
    assert await hooks.receive(*signed(NOTIFICATION)) == (200, {"status": "posted to the session's thread"})
    await settle(hooks)
    assert sessions.calls == [
        ("wake", 7, NOW, True),
        ("post_in_thread", 7, hook_note("Notification", NOTIFICATION, "U0MEMBER")),
        ("poll_now", 7),
    ]


async def test_session_end_stops_following_only_when_this_replica_polled(store):
    event = {"hook_event_name": "SessionEnd", "session_id": "s-1", "cwd": "~", "reason": "logout"}
    sessions = FakeSessions({"s-1": Link(7, "U0MEMBER")})
    hooks = receiver(store, sessions)
    await hooks.receive(*signed(event))
    await settle(hooks)
    assert [c[0] for c in sessions.calls] == ["wake", "post_in_thread", "poll_now", "stop_following"]
    assert sessions.calls[-1] == ("stop_following", 7, False)

    held_elsewhere = FakeSessions({"s-1": Link(7, "U0MEMBER")}, polled_ok=False)
    hooks = receiver(store, held_elsewhere)
    await hooks.receive(*signed({**event, "reason": "other"}))
    await settle(hooks)
    assert [c[0] for c in held_elsewhere.calls] == ["wake", "post_in_thread", "poll_now"]


async def test_subagent_stop_only_polls(store):
    sessions = FakeSessions({"s-1": Link(7, "U0MEMBER")})
    hooks = receiver(store, sessions)
    event = {"hook_event_name": "SubagentStop", "session_id": "s-1", "cwd": "~"}
    assert await hooks.receive(*signed(event)) == (200, {"status": "posted to the session's thread"})
    await settle(hooks)
    assert sessions.calls == [("wake", 7, NOW, True), ("poll_now", 7)]


async def test_an_unknown_session_of_a_known_user_is_a_dm_and_a_refused_dm_is_502(store):
    event = {**NOTIFICATION, "session_id": "local-1", "user": "carol@example.com"}
    slack = FakeSlack()
    assert await receiver(store, slack=slack).receive(*signed(event)) == (200, {"status": "sent as a direct message"})
    assert slack.posts == [("U0MEMBER", hook_dm("Notification", event))]
    refusing = FakeSlack(SlackFailure("chat.postMessage", "channel_not_found", True))
    again = {**event, "message": "again?"}
    assert await receiver(store, slack=refusing).receive(*signed(again)) == (
        502,
        {"status": "Slack refused the direct message (channel_not_found)"},
    )


async def test_unknown_events_sessions_and_users_are_dropped_with_202(store):
    slack = FakeSlack()
    hooks = receiver(store, slack=slack)
    assert await hooks.receive(*signed({**NOTIFICATION, "hook_event_name": "PreToolUse"})) == (
        202,
        {"status": "dropped: unknown event"},
    )
    for event in (
        {**NOTIFICATION, "session_id": "local-2", "user": "stranger@example.com"},
        {**NOTIFICATION, "session_id": "local-3"},
        {"hook_event_name": "SubagentStop", "session_id": "local-4", "cwd": "~", "user": "carol@example.com"},
    ):
        assert await hooks.receive(*signed(event)) == (202, {"status": "dropped: unknown session and user"})
    assert slack.posts == []


async def test_one_delivery_to_two_replicas_is_routed_once(database):
    """Two receivers on two Store objects (two replicas) on one database: the claim key decides."""
    first_store, second_store = Store(database), Store(database)
    try:
        sessions = FakeSessions({"s-1": Link(7, "U0MEMBER")})
        first, second = receiver(first_store, sessions), receiver(second_store, sessions)
        headers, body = signed(NOTIFICATION)
        answers = await asyncio.gather(first.receive(headers, body), second.receive(headers, body))
        assert sorted(status for status, _ in answers) == [200, 200]
        assert sorted(answer["status"] for _, answer in answers) == ["duplicate", "posted to the session's thread"]
        await settle(first)
        await settle(second)
        assert [c[0] for c in sessions.calls] == ["wake", "post_in_thread", "poll_now"]
    finally:
        first_store.close()
        second_store.close()


# ------------------------------------------------------------------ per-person hook tokens


def token_receiver(
    store: Store, tokens: HookTokens, sessions: FakeSessions | None = None, slack: FakeSlack | None = None, secret: str | None = None
) -> HookReceiver:
    return HookReceiver(
        store=store,
        sessions=sessions or FakeSessions(),
        slack=slack or FakeSlack(),  # type: ignore[arg-type]
        messages=session_messages,
        identity=FakeIdentity(),  # type: ignore[arg-type]
        secret=secret,
        now=lambda: NOW,
        tokens=tokens,
    )


def token_signed(event: dict[str, Any], token: str, *, at: dt.datetime = NOW) -> tuple[dict[str, str], bytes]:
    """A delivery as ``agent-bot hook`` sends it with a person's token: the token id, and the
    signature keyed with the token's SHA-256."""
    headers, body = signed(event, at=at, secret=token_key(token))
    return {TOKEN_ID_HEADER: token_id_of(token), **headers}, body


@pytest.fixture
def tokens(store):
    return HookTokens(store, now=lambda: NOW)


async def test_a_token_speaks_in_its_owners_session_and_is_refused_in_anothers(store, tokens, caplog):
    carol = await tokens.issue("U0MEMBER", "carol@example.com")
    sessions = FakeSessions({"s-carol": Link(7, "U0MEMBER"), "s-bob": Link(8, "U0MANAGER")})
    hooks = token_receiver(store, tokens, sessions)
    into_bob = token_signed({**NOTIFICATION, "session_id": "s-bob"}, carol.token)
    assert (
        await hooks.receive(*into_bob)
        == NOT_YOUR_SESSION
        == (403, {"error": "this hook token may only speak in sessions its owner started"})
    )
    assert sessions.calls == []
    assert not await store.was_claimed(claim_key(*into_bob))  # refused, not spent: a retry is refused again
    assert await hooks.receive(*into_bob) == NOT_YOUR_SESSION
    key = token_key(carol.token)
    assert all(carol.token not in r.getMessage() and key not in r.getMessage() for r in caplog.records)
    assert any(r.levelname == "WARNING" and carol.token_id in r.getMessage() for r in caplog.records)

    into_carol = {**NOTIFICATION, "session_id": "s-carol"}
    assert await hooks.receive(*token_signed(into_carol, carol.token)) == (200, {"status": "posted to the session's thread"})
    await settle(hooks)
    assert sessions.calls == [
        ("wake", 7, NOW, True),
        ("post_in_thread", 7, hook_note("Notification", into_carol, "U0MEMBER")),
        ("poll_now", 7),
    ]


async def test_a_token_dms_its_owner_only(store, tokens):
    carol = await tokens.issue("U0MEMBER", "Carol@Example.com")
    slack = FakeSlack()
    hooks = token_receiver(store, tokens, slack=slack)
    to_bob = {**NOTIFICATION, "session_id": "local-1", "user": "bob@example.com"}
    assert (
        await hooks.receive(*token_signed(to_bob, carol.token))
        == NOT_YOUR_DM
        == (
            403,
            {"error": "this hook token may only send direct messages to its owner"},
        )
    )
    assert slack.posts == []
    own = {**NOTIFICATION, "session_id": "local-1", "user": "carol@example.com"}  # e-mails compare without case
    unnamed = {"hook_event_name": "Stop", "session_id": "local-2", "cwd": "~"}  # the token says whose it is
    assert await hooks.receive(*token_signed(own, carol.token)) == (200, {"status": "sent as a direct message"})
    assert await hooks.receive(*token_signed(unnamed, carol.token)) == (200, {"status": "sent as a direct message"})
    assert slack.posts == [("U0MEMBER", hook_dm("Notification", own)), ("U0MEMBER", hook_dm("Stop", unnamed))]


async def test_revoked_unknown_and_wrongly_signed_tokens_are_401(store, tokens):
    carol = await tokens.issue("U0MEMBER", "carol@example.com")
    sessions = FakeSessions({"s-1": Link(7, "U0MEMBER")})
    hooks = token_receiver(store, tokens, sessions)
    headers, body = token_signed(NOTIFICATION, carol.token)
    forged = {**headers, SIGNATURE_HEADER: sign(carol.token, headers[TIMESTAMP_HEADER], body)}  # keyed with the clear token
    assert await hooks.receive(forged, body) == (401, {"error": "missing, stale or wrong signature"})
    assert await hooks.receive(*token_signed(NOTIFICATION, carol.token, at=NOW - dt.timedelta(minutes=6))) == (
        401,
        {"error": "missing, stale or wrong signature"},
    )
    assert await hooks.receive({**headers, TOKEN_ID_HEADER: "0123456789ab"}, body) == UNKNOWN_TOKEN
    assert await tokens.revoke("U0MEMBER") == 1
    assert (
        await hooks.receive(headers, body)
        == UNKNOWN_TOKEN
        == (
            401,
            {"error": "unknown or revoked hook token; run /agent hook token in Slack for a new one"},
        )
    )
    assert sessions.calls == []
    assert not await store.was_claimed(claim_key(headers, body))


async def test_without_a_shared_secret_a_delivery_must_name_a_token(store, tokens):
    sessions = FakeSessions({"s-1": Link(7, "U0MEMBER")})
    hooks = token_receiver(store, tokens, sessions)
    assert await hooks.receive(*signed(NOTIFICATION)) == NO_TOKEN
    assert sessions.calls == []


async def test_the_shared_secret_still_speaks_for_anyone_when_configured(store, tokens):
    """Single-user setups: a delivery without a token id, signed with AGENT_BOT_HOOK_SECRET, is routed
    as before, beside per-person tokens."""
    carol = await tokens.issue("U0MEMBER", "carol@example.com")
    sessions = FakeSessions({"s-bob": Link(8, "U0MANAGER")})
    slack = FakeSlack()
    hooks = token_receiver(store, tokens, sessions, slack, secret=SECRET)
    into_bob = {**NOTIFICATION, "session_id": "s-bob"}
    assert await hooks.receive(*signed(into_bob)) == (200, {"status": "posted to the session's thread"})
    dm = {**NOTIFICATION, "session_id": "local-1", "user": "carol@example.com"}
    assert await hooks.receive(*signed(dm)) == (200, {"status": "sent as a direct message"})
    await settle(hooks)
    assert sessions.calls[1] == ("post_in_thread", 8, hook_note("Notification", into_bob, "U0MANAGER"))
    assert slack.posts == [("U0MEMBER", hook_dm("Notification", dm))]
    # a token named beside the shared secret is still held to its owner
    assert await hooks.receive(*token_signed({**into_bob, "message": "again"}, carol.token)) == NOT_YOUR_SESSION
