"""``Accounts`` (bot/services/accounts): people's own platform API keys, checked with one call,
encrypted at rest (Fernet, rotation with several keys), refused keys marked once, per-person clients
reused; on SQLite and on PostgreSQL (two stores on one database stand for two replicas)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr
from sqlalchemy import select

from bot.api.errors import UnauthorizedError
from bot.outcomes import Invalid, Refused
from bot.services.accounts import Accounts, EncryptionKeyError, Linked, LinkStatus, PlatformEndpoint, key_ring, linked_accounts
from bot.services.accounts.service import (
    KEY_REFUSED,
    KEY_REFUSED_HINT,
    KEY_SHAPE,
    LINK_ACTION,
    LINKING_OFF,
    NO_KEY,
    NOT_CHECKED,
    NOT_CHECKED_HINT,
)
from bot.store import Store
from tests.conftest import postgres_url

T0 = dt.datetime(2026, 11, 22, 7, 0, tzinfo=dt.UTC)
GOOD = "pk_live_member_0123456789abcd"
OTHER = "pk_live_member_9876543210wxyz"
NO_ROLE = "pk_live_guest_00000000000000gg"
KEY_A, KEY_B = Fernet.generate_key().decode(), Fernet.generate_key().decode()
TEAM = "T0EMULATED"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


class Platform:
    """A stand-in for ``GET /api/v0/computers``: GOOD and OTHER are keys, NO_ROLE answers 403, any
    other key 401 with the key echoed in the error body (as a careless server might)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.fail: type[Exception] | None = None
        self.revoked: set[str] = set()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        key = request.headers["authorization"].removeprefix("Bearer ")
        self.seen.append(key)
        if self.fail is not None:
            raise self.fail("boom", request=request)
        if key in (GOOD, OTHER) and key not in self.revoked:
            return httpx.Response(200, json={"computers": []})
        if key == NO_ROLE:
            return httpx.Response(403, json={"error": {"code": "forbidden", "message": "role required"}})
        return httpx.Response(401, json={"error": {"code": "unauthorized", "message": f"unknown key {key}"}})


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'accounts.db'}" if request.param == "sqlite" else postgres_url("linked_accounts")


@pytest.fixture
def store(database_url):
    opened = Store(database_url)
    yield opened
    opened.close()


@pytest.fixture
def platform() -> Platform:
    return Platform()


def accounts_on(store: Store, platform: Platform, keys: str = KEY_A, clock: Clock | None = None, **options) -> Accounts:
    endpoint = PlatformEndpoint("http://platform.test", transport=httpx.MockTransport(platform))
    return Accounts(store, ring=key_ring(SecretStr(keys)), endpoint=endpoint, now=clock or Clock(), **options)


def raw_rows(store: Store) -> list[dict]:
    with store.engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(select(linked_accounts))]


async def test_a_linked_key_is_stored_as_a_fernet_token_never_in_plain_text(store, platform):
    accounts = accounts_on(store, platform)
    linked = await accounts.link(TEAM, "U0MEMBER", SecretStr(f"  {GOOD}\n"))  # pasted with spaces around
    assert linked == Linked("abcd", T0, forbidden=False)
    assert platform.seen == [GOOD]  # one call, with the person's key
    [row] = raw_rows(store)
    assert GOOD not in json.dumps(row, default=str)
    assert (row["team_id"], row["slack_user"], row["fingerprint"], row["refused_at"], row["refusal_notified_at"]) == (
        TEAM,
        "U0MEMBER",
        "abcd",
        None,
        None,
    )
    assert Fernet(KEY_A.encode()).decrypt(row["key_token"].encode()).decode() == GOOD
    assert await accounts.key_for(TEAM, "U0MEMBER") == SecretStr(GOOD)
    assert await accounts.status(TEAM, "U0MEMBER") == LinkStatus(True, T0, None, "abcd")
    assert await accounts.key_for("T0OTHER", "U0MEMBER") is None  # another workspace's person


async def test_a_key_the_platform_refuses_is_invalid_and_nothing_is_stored(store, platform):
    accounts = accounts_on(store, platform)
    assert await accounts.link(TEAM, "U0MEMBER", SecretStr("pk_wrong_key_123456789")) == Invalid(KEY_REFUSED, KEY_REFUSED_HINT)
    assert raw_rows(store) == []
    assert await accounts.status(TEAM, "U0MEMBER") == LinkStatus(False)


async def test_a_key_without_a_role_for_the_check_is_still_stored(store, platform):
    accounts = accounts_on(store, platform)
    assert await accounts.link(TEAM, "U0GUEST", SecretStr(NO_ROLE)) == Linked("00gg", T0, forbidden=True)
    assert await accounts.key_for(TEAM, "U0GUEST") == SecretStr(NO_ROLE)


@pytest.mark.parametrize(
    ("failure", "why"),
    [(httpx.ConnectError, "the platform could not be reached"), (httpx.ReadTimeout, "the platform did not answer in time")],
)
async def test_no_answer_from_the_platform_stores_nothing_and_says_so(store, platform, failure, why):
    platform.fail = failure
    accounts = accounts_on(store, platform)
    assert await accounts.link(TEAM, "U0MEMBER", SecretStr(GOOD)) == Invalid(NOT_CHECKED.format(why=why), NOT_CHECKED_HINT)
    assert len(platform.seen) == 1  # one call, no retries: the check runs before a modal's 3 s ack
    assert raw_rows(store) == []


@pytest.mark.parametrize(("pasted", "problem"), [("", NO_KEY), ("   ", NO_KEY), ("two words", KEY_SHAPE), ("clé-ünicode", KEY_SHAPE)])
async def test_what_cannot_be_a_key_is_refused_without_a_call(store, platform, pasted, problem):
    accounts = accounts_on(store, platform)
    outcome = await accounts.link(TEAM, "U0MEMBER", SecretStr(pasted))
    assert isinstance(outcome, Invalid) and outcome.message == problem
    assert platform.seen == [] and raw_rows(store) == []


async def test_without_an_encryption_key_linking_is_refused_naming_the_setting(store, platform):
    accounts = Accounts(store, ring=None, endpoint=PlatformEndpoint("http://platform.test"), now=Clock())
    assert await accounts.link(TEAM, "U0MEMBER", SecretStr(GOOD)) == Refused(LINK_ACTION, LINKING_OFF)
    assert "AGENT_BOT_ENCRYPTION_KEY" in LINKING_OFF
    assert platform.seen == [] and raw_rows(store) == []


def test_a_malformed_encryption_key_is_named_by_position_never_shown():
    with pytest.raises(EncryptionKeyError) as raised:
        key_ring(SecretStr(f"{KEY_A}, not-a-fernet-key"))
    assert str(raised.value).startswith("AGENT_BOT_ENCRYPTION_KEY: key 2 of 2 is not a Fernet key")
    assert "not-a-fernet-key" not in str(raised.value) and KEY_A not in str(raised.value)
    assert key_ring(None) is None and key_ring(SecretStr(" , ")) is None
    assert repr(key_ring(SecretStr(f"{KEY_A},{KEY_B}"))) == "KeyRing(2 keys)"


async def test_rotation_old_rows_decrypt_with_the_new_ring_and_are_reencrypted_with_the_first_key(store, platform):
    await accounts_on(store, platform, KEY_A).link(TEAM, "U0MEMBER", SecretStr(GOOD))
    [before] = raw_rows(store)
    rotated = accounts_on(store, platform, f"{KEY_B},{KEY_A}")
    assert await rotated.key_for(TEAM, "U0MEMBER") == SecretStr(GOOD)
    [after] = raw_rows(store)
    assert after["key_token"] != before["key_token"]
    assert Fernet(KEY_B.encode()).decrypt(after["key_token"].encode()).decode() == GOOD  # the old key may go now
    assert await accounts_on(store, platform, KEY_B).key_for(TEAM, "U0MEMBER") == SecretStr(GOOD)
    await rotated.link(TEAM, "U0OTHER", SecretStr(OTHER))  # a write uses the first key
    token = next(r["key_token"] for r in raw_rows(store) if r["slack_user"] == "U0OTHER")
    assert Fernet(KEY_B.encode()).decrypt(token.encode()).decode() == OTHER


async def test_a_key_the_ring_cannot_decrypt_is_not_used_and_status_says_so(store, platform, caplog):
    await accounts_on(store, platform, KEY_A).link(TEAM, "U0MEMBER", SecretStr(GOOD))
    lost = accounts_on(store, platform, KEY_B)
    with caplog.at_level(logging.WARNING):
        assert await lost.key_for(TEAM, "U0MEMBER") is None
    assert await lost.client_for(TEAM, "U0MEMBER") is None
    assert await lost.status(TEAM, "U0MEMBER") == LinkStatus(True, T0, None, "abcd", readable=False)
    assert "cannot be decrypted" in caplog.text and GOOD not in caplog.text


async def test_two_replicas_on_one_database_read_the_same_key_and_unlink_for_both(database_url, platform):
    first, second = Store(database_url), Store(database_url)
    try:
        one, two = accounts_on(first, platform), accounts_on(second, platform)
        await one.link(TEAM, "U0MEMBER", SecretStr(GOOD))
        assert await two.key_for(TEAM, "U0MEMBER") == SecretStr(GOOD)
        await two.link(TEAM, "U0MEMBER", SecretStr(OTHER))  # linking again replaces the key
        assert await one.key_for(TEAM, "U0MEMBER") == SecretStr(OTHER)
        assert await one.unlink(TEAM, "U0MEMBER") is True
        assert await two.key_for(TEAM, "U0MEMBER") is None
        assert await two.unlink(TEAM, "U0MEMBER") is False
    finally:
        first.close()
        second.close()


async def test_a_refused_key_is_marked_once_across_replicas_and_no_longer_used(database_url, platform):
    clock = Clock()
    stores = [Store(database_url) for _ in range(2)]
    try:
        one, two = (accounts_on(s, platform, clock=clock) for s in stores)
        await one.link(TEAM, "U0MEMBER", SecretStr(GOOD))
        clock.now = T0 + dt.timedelta(hours=1)
        firsts = await asyncio.gather(*(a.mark_refused(TEAM, "U0MEMBER") for a in (one, two, one, two)))
        assert sorted(firsts) == [False, False, False, True]  # exactly one caller DMs
        assert await two.key_for(TEAM, "U0MEMBER") is None and await one.client_for(TEAM, "U0MEMBER") is None
        assert await one.status(TEAM, "U0MEMBER") == LinkStatus(True, T0, clock.now, "abcd")
        clock.now = T0 + dt.timedelta(hours=2)
        await two.link(TEAM, "U0MEMBER", SecretStr(OTHER))  # linking again clears the mark
        assert await one.status(TEAM, "U0MEMBER") == LinkStatus(True, clock.now, None, "wxyz")
        assert await one.mark_refused(TEAM, "U0MEMBER", api_key=SecretStr(GOOD)) is False  # the old key's refusal
        assert await one.key_for(TEAM, "U0MEMBER") == SecretStr(OTHER)
        assert await one.mark_refused(TEAM, "U0MEMBER", api_key=SecretStr(OTHER)) is True
        assert await one.mark_refused("T0OTHER", "U0NOBODY") is False
    finally:
        for store in stores:
            store.close()


async def test_client_for_reuses_one_client_per_person_and_key_and_closes_the_ones_it_drops(store, platform):
    accounts = accounts_on(store, platform, clients_kept=2)
    for user in ("U1", "U2", "U3"):
        await accounts.link(TEAM, user, SecretStr(GOOD))
    assert await accounts.client_for(TEAM, "U0NOBODY") is None
    first = await accounts.client_for(TEAM, "U1")
    assert first is not None and await accounts.client_for(TEAM, "U1") is first
    assert await first.list_computers() == []
    assert platform.seen[-1] == GOOD
    second = await accounts.client_for(TEAM, "U2")
    third = await accounts.client_for(TEAM, "U3")  # U1's is the least recently used: closed
    assert first._http.is_closed and not second._http.is_closed
    await accounts.link(TEAM, "U2", SecretStr(OTHER))  # a new key: a new client
    assert second._http.is_closed
    replaced = await accounts.client_for(TEAM, "U2")
    assert replaced is not second and replaced is not None
    await replaced.list_computers()
    assert platform.seen[-1] == OTHER
    await accounts.unlink(TEAM, "U3")
    assert third._http.is_closed
    await accounts.aclose()
    assert replaced._http.is_closed


async def test_a_persons_key_never_reaches_an_error_message_or_a_log(store, platform, caplog):
    """The platform echoes a refused key in its error body: the person's client masks it (as the
    bot's client masks the bot's), and nothing the service logs carries it."""
    accounts = accounts_on(store, platform)
    with caplog.at_level(logging.DEBUG):
        await accounts.link(TEAM, "U0MEMBER", SecretStr(GOOD))
        await accounts.link(TEAM, "U0MEMBER", SecretStr("pk_wrong_key_123456789"))
        client = await accounts.client_for(TEAM, "U0MEMBER")
        assert client is not None
        platform.revoked.add(GOOD)  # revoked in the web app since
        with pytest.raises(UnauthorizedError) as refused:
            await client.list_computers()
        assert GOOD not in repr(client) and repr(await accounts.key_for(TEAM, "U0MEMBER")) == "SecretStr('**********')"
    assert str(refused.value) == "GET /api/v0/computers failed: HTTP 401 Unauthorized (unauthorized: unknown key ***)"
    assert GOOD not in caplog.text and "pk_wrong_key_123456789" not in caplog.text


def seen(store: Store, person: str, enterprise_id: str | None, team_id: str) -> None:
    """The workspace check of OAuth mode saw ``person`` act in ``team_id`` (of ``enterprise_id``)."""
    from bot.installations import slack_conversation_teams

    with store.engine.begin() as conn:
        conn.execute(slack_conversation_teams.insert().values(id=person, enterprise_id=enterprise_id, team_id=team_id, seen_at=T0))


async def test_a_grid_persons_link_holds_in_every_workspace_of_the_organization_and_nowhere_else(store, platform):
    accounts = accounts_on(store, platform)
    seen(store, "W0GRIDUSER", "E0GRID", "T0FIRST")
    seen(store, "U0SOLO", None, "T0SOLO")  # a workspace that is in no Grid: as before, per workspace
    assert await accounts.link("T0FIRST", "W0GRIDUSER", SecretStr(GOOD)) == Linked("abcd", T0, enterprise_id="E0GRID")
    assert await accounts.link("T0SOLO", "U0SOLO", SecretStr(OTHER)) == Linked("wxyz", T0)
    assert sorted((r["team_id"], r["slack_user"]) for r in raw_rows(store)) == [("E0GRID", "W0GRIDUSER"), ("T0SOLO", "U0SOLO")]
    assert await accounts.key_for("T0SECOND", "W0GRIDUSER") == SecretStr(GOOD)  # another workspace of her Grid
    assert await accounts.status("T0SECOND", "W0GRIDUSER") == LinkStatus(True, T0, None, "abcd", True, "E0GRID")
    assert await accounts.key_for("T0OTHER", "U0SOLO") is None  # not in a Grid: this workspace only
    assert await accounts.mark_refused("T0SECOND", "W0GRIDUSER", api_key=SecretStr(GOOD))  # refused anywhere: refused
    assert await accounts.key_for("T0FIRST", "W0GRIDUSER") is None
    assert await accounts.unlink("T0SECOND", "W0GRIDUSER")
    assert [(r["team_id"], r["slack_user"]) for r in raw_rows(store)] == [("T0SOLO", "U0SOLO")]


async def test_a_link_made_in_a_grid_workspace_before_its_organizations_is_still_found_and_replaced(store, platform):
    accounts = accounts_on(store, platform)
    assert await accounts.link("T0FIRST", "W0GRIDUSER", SecretStr(GOOD)) == Linked("abcd", T0)  # not seen in the Grid yet
    seen(store, "W0GRIDUSER", "E0GRID", "T0FIRST")
    assert await accounts.key_for("T0FIRST", "W0GRIDUSER") == SecretStr(GOOD)  # its own workspace's link still holds
    assert await accounts.link("T0FIRST", "W0GRIDUSER", SecretStr(OTHER)) == Linked("wxyz", T0, enterprise_id="E0GRID")
    assert [(r["team_id"], r["slack_user"]) for r in raw_rows(store)] == [("E0GRID", "W0GRIDUSER")]
