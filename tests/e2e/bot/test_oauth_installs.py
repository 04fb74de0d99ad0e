"""OAuth mode end to end (issue #31, part 1): the bot served on loopback against the Slack emulator and
the sandbox Agent API, installed through OAuth (``GET /slack/install`` -> Slack's authorize page ->
``/slack/oauth_redirect``), then answering with the installed token; a team with no installation
refused; ``app_uninstalled`` marking the installation (kept); and token rotation (a token refreshed
before it expires, once by one of two replicas on PostgreSQL; a failing refresh retried, the old token
kept)."""

from __future__ import annotations

import asyncio
import datetime as dt
import html
import logging
import re
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import httpx
import pytest
import sqlalchemy as sa
from cryptography.fernet import Fernet

from bot.api import AgentClient
from bot.config import ConfigurationError, Settings
from bot.installations import (
    BOT_SCOPES,
    SCOPE_WORDS,
    Installations,
    oauth_client,
    slack_bots,
    slack_installation_states,
    slack_installations,
)
from bot.store import Store
from bot.wiring import build_installations, create_bot
from formatters.notices import other_workspace_message
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, ResponseUrlOrigin, SlackEmulator
from sandbox.slack_emulator.client_side import SlackRequest
from tests.conftest import postgres_url

T = TypeVar("T")
T0 = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)
STATE_SECRET = "emulated-state-secret"
FORM = "application/x-www-form-urlencoded"
REDIRECT = "http://127.0.0.1:9/slack/oauth_redirect"


class Clock:
    """The bot's clock (aware UTC) and the emulator's (epoch seconds), moved together."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now

    def epoch(self) -> float:
        return self.now.timestamp()

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


def oauth_settings(slack: SlackEmulator, sandbox_url: str, database_url: str, key: str, roles: Path | None = None) -> Settings:
    return Settings(
        SLACK_CLIENT_ID=DEFAULT_CLIENT_ID,
        SLACK_CLIENT_SECRET=DEFAULT_CLIENT_SECRET,
        SLACK_STATE_SECRET=STATE_SECRET,
        SLACK_SIGNING_SECRET=slack.signing_secret,
        SLACK_API_URL=slack.api_url,
        AGENT_API_URL=sandbox_url,
        AGENT_API_KEY=SandboxConfig().api_key,
        database_url=database_url,
        encryption_key=key,
        config_file=str(roles) if roles else None,
    )


def wait_until(predicate: Callable[[], T], what: str, timeout: float = 10.0) -> T:
    """What crosses threads (the bot's listener runs after its ack): ``predicate`` until it is truthy."""
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)
    return result


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Running:
    def __init__(self, slack: SlackEmulator, bot: Any, url: str, clock: Clock, settings: Settings) -> None:
        self.slack, self.bot, self.url, self.clock, self.settings = slack, bot, url, clock, settings


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    clock = Clock()
    sandbox = serve_in_thread(create_app(SandboxConfig()))
    slack = SlackEmulator().start()
    slack.oauth.clock = clock.epoch
    roles = tmp_path / "roles.yaml"
    roles.write_text("roles:\n  owners: [alice@example.com]\n  managers: [bob@example.com]\n")
    port = free_port()
    settings = oauth_settings(slack, sandbox.url, f"sqlite:///{tmp_path / 'bot.db'}", Fernet.generate_key().decode(), roles)
    settings.slack_redirect_uri = f"http://127.0.0.1:{port}/slack/oauth_redirect"
    agent = AgentClient(base_url=sandbox.url, api_key=SandboxConfig().api_key)
    bot = create_bot(settings, agent=agent, now=clock)
    bot.run_jobs = False
    server = serve_in_thread(bot.asgi(), port=port)
    try:
        yield Running(slack, bot, server.url, clock, settings)
    finally:
        server.stop()
        slack.stop()
        sandbox.stop()
        bot.services.store.close()


def install(running: Running) -> httpx.Response:
    """A person installs the app: the install page, Slack's authorize page (approved at once), the redirect."""
    page = httpx.get(f"{running.url}/slack/install")
    assert page.status_code == 200
    link = re.search(r'href="([^"]+)"', page.text)
    assert link is not None
    cookie = page.headers["set-cookie"].split(";")[0]  # Secure: a browser on https sends it back
    authorized = httpx.get(link.group(1).replace("&amp;", "&"), follow_redirects=False)
    assert authorized.status_code == 302
    return httpx.get(authorized.headers["location"], headers={"Cookie": cookie})


def slash_command(running: Running, text: str, *, team_id: str = "T0EMULATED", user_id: str = "U0MEMBER") -> httpx.Response:
    slack = running.slack
    rid, url = slack.issue_response_url(ResponseUrlOrigin("slash_command", "C0GENERAL", user_id))
    fields = {
        "token": slack.verification_token,
        "team_id": team_id,
        "team_domain": "x",
        "channel_id": "C0GENERAL",
        "channel_name": "general",
        "user_id": user_id,
        "user_name": "carol",
        "command": "/agent",
        "text": text,
        "api_app_id": slack.directory.bot.app_id,
        "is_enterprise_install": "false",
        "response_url": url,
        "trigger_id": f"trigger-{rid}",
    }
    with slack.client(running.url) as client:
        sent = client.send(SlackRequest("slash_command", urlencode(fields), FORM, fields, rid, url))
    return httpx.Response(sent.status_code, text=sent.body, headers={"x-response-url-id": rid})


def stored(running: Running) -> list[dict[str, Any]]:
    with running.bot.services.store.engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(sa.select(slack_bots))]


def test_the_install_page_says_what_the_app_will_be_able_to_do(running):
    page = httpx.get(f"{running.url}/slack/install")
    assert page.status_code == 200
    for scope in BOT_SCOPES:
        assert f"<li>{html.escape(SCOPE_WORDS[scope])} <code>{scope}</code></li>" in page.text
    assert f"{running.slack.url}/oauth/v2/authorize?" in page.text


def test_an_install_through_oauth_stores_the_token_encrypted_and_commands_are_answered_with_it(running, caplog):
    before = slash_command(running, "help")
    assert (before.status_code, before.json()) == (200, other_workspace_message())  # nothing installed yet

    done = install(running)
    assert done.status_code == 200
    [row] = stored(running)
    issued = [t for t in running.slack.oauth._tokens]  # the one token the emulator issued
    assert len(issued) == 1 and issued[0] not in str(row) and "xoxb" not in str(row)
    with running.bot.services.store.engine.connect() as conn:
        installation = dict(conn.execute(sa.select(slack_installations)).one()._mapping)
    assert "xoxb" not in str(installation)
    assert (row["team_id"], row["app_id"], row["bot_user_id"], row["bot_id"]) == ("T0EMULATED", "A0AGENTBOT", "U0AGENTBOT", "B0AGENTBOT")
    assert issued[0] not in caplog.text

    running.slack.recorder.clear()
    answered = slash_command(running, "usage 7d", user_id="U0MANAGER")
    assert (answered.status_code, answered.text) == (200, "")  # acked; the answer follows on the response_url
    recorder = running.slack.recorder
    [reply] = recorder.wait_for(lambda: recorder.responses(answered.headers["x-response-url-id"]))
    assert reply.payload["blocks"] and reply.payload != other_workspace_message()
    calls = running.slack.recorder.calls()
    # the bot holds no other token, so these went with the installed one (nobody has some e-mails: an answer)
    assert calls and {c.response.get("error") for c in calls} <= {None, "users_not_found"}
    assert {c.method for c in calls} >= {"users.info"}


def test_a_team_with_no_installation_is_refused_as_today(running):
    install(running)
    running.slack.recorder.clear()
    refused = slash_command(running, "help", team_id="T0OTHER")
    assert (refused.status_code, refused.json()) == (200, other_workspace_message())
    assert running.slack.recorder.calls() == []


def test_app_uninstalled_marks_the_installation_and_keeps_it(running):
    install(running)
    with running.slack.client(running.url) as client:
        assert client.send_app_uninstalled().status_code == 200
    running.slack.oauth.revoke("T0EMULATED")

    def marks() -> list[tuple[str, str]]:
        with running.bot.services.store.engine.connect() as conn:
            table = slack_installation_states
            return [tuple(r) for r in conn.execute(sa.select(table.c.key, table.c.revoked_reason).where(table.c.revoked_at.is_not(None)))]

    assert wait_until(marks, "the listener (after the ack, in the bot's thread)") == [("-:T0EMULATED", "app_uninstalled")]
    assert len(stored(running)) == 1  # nothing deleted
    refused = slash_command(running, "help")
    assert refused.json() == other_workspace_message()
    install(running)  # installed again: served again
    served = slash_command(running, "help")
    assert (served.status_code, served.text) == (200, "")  # acked, not refused; the help follows
    recorder = running.slack.recorder
    [reply] = recorder.wait_for(lambda: recorder.responses(served.headers["x-response-url-id"]))
    assert reply.payload["blocks"]
    assert len(stored(running)) == 2  # the first installation is still there


def test_tokens_revoked_for_the_bot_marks_the_installation_and_user_tokens_only_do_not(running):
    install(running)

    def marks() -> list[tuple[str, str]]:
        with running.bot.services.store.engine.connect() as conn:
            table = slack_installation_states
            return [tuple(r) for r in conn.execute(sa.select(table.c.key, table.c.revoked_reason).where(table.c.revoked_at.is_not(None)))]

    with running.slack.client(running.url) as client:
        assert client.send_tokens_revoked(bot=[], oauth=["U0OWNER"]).status_code == 200
        served = slash_command(running, "help")  # still installed: the bot's token was not revoked
        assert (served.status_code, served.text) == (200, "")
        assert client.send_tokens_revoked().status_code == 200
    assert wait_until(marks, "the tokens_revoked listener") == [("-:T0EMULATED", "tokens_revoked")]
    assert slash_command(running, "help").json() == other_workspace_message()
    assert len(stored(running)) == 1


def test_oauth_mode_needs_its_secrets_and_the_encryption_key(tmp_path):
    settings = Settings(SLACK_CLIENT_ID="1.2", SLACK_SIGNING_SECRET="s", AGENT_API_URL="http://x", AGENT_API_KEY="k")
    with pytest.raises(ConfigurationError) as missing:
        create_bot(settings)
    assert str(missing.value) == (
        "missing settings: SLACK_CLIENT_SECRET, SLACK_STATE_SECRET, AGENT_BOT_ENCRYPTION_KEY (see README, Configuration)"
    )


# ---------------------------------------------------------------------------------- token rotation


def replica(slack: SlackEmulator, database_url: str, key: str, clock: Clock) -> tuple[Installations, Store]:
    settings = oauth_settings(slack, "http://127.0.0.1:9", database_url, key)
    store = Store(database_url, now=clock, auto_upgrade=True)
    return build_installations(settings, store, oauth_client(slack.api_url), clock), store


async def install_rotating(slack: SlackEmulator, installations: Installations) -> str:
    """An installation with a rotating token, as Bolt's flow stores it (through the same store)."""
    from slack_sdk.oauth.installation_store import Installation

    slack.oauth.token_rotation = True
    code = httpx.get(
        slack.oauth.authorize_url(scope="commands", state="s", redirect_uri=REDIRECT, base_url=slack.url),
        follow_redirects=False,
    ).headers["location"]
    code = code.split("code=")[1].split("&")[0]
    granted = httpx.post(
        f"{slack.api_url}oauth.v2.access", data={"client_id": DEFAULT_CLIENT_ID, "client_secret": DEFAULT_CLIENT_SECRET, "code": code}
    ).json()
    await installations.store.async_save(
        Installation(
            app_id=granted["app_id"],
            enterprise_id=None,
            team_id=granted["team"]["id"],
            bot_token=granted["access_token"],
            bot_id="B0AGENTBOT",
            bot_user_id=granted["bot_user_id"],
            bot_scopes=granted["scope"],
            bot_refresh_token=granted["refresh_token"],
            bot_token_expires_at=int(installations.now().timestamp()) + granted["expires_in"],
            user_id="U0OWNER",
            installed_at=installations.now().timestamp(),
        )
    )
    return str(granted["access_token"])


@pytest.fixture
def rotating() -> Iterator[tuple[SlackEmulator, Clock]]:
    clock = Clock()
    with SlackEmulator() as slack:
        slack.oauth.clock = clock.epoch
        yield slack, clock


def test_two_replicas_refresh_a_token_about_to_expire_once(rotating):
    slack, clock = rotating
    url, key = postgres_url(upgraded=True), Fernet.generate_key().decode()
    (one, store_one), (two, store_two) = replica(slack, url, key, clock), replica(slack, url, key, clock)

    async def run() -> tuple[str, list[str | None]]:
        first = await install_rotating(slack, one)
        assert await one.token_for(None, "T0EMULATED") == first  # 12 h left: nothing to do
        clock.advance(hours=11)  # within the 120 minutes before it expires
        return first, list(await asyncio.gather(one.token_for(None, "T0EMULATED"), two.token_for(None, "T0EMULATED")))

    try:
        first, tokens = asyncio.run(run())
        assert (slack.oauth.refresh_calls, slack.oauth.refreshes) == (1, 1)  # one replica asked, once
        assert all(t is not None and slack.oauth.refusal(t) is None for t in tokens)  # both work: the old one until it expires
        newest = asyncio.run(two.token_for(None, "T0EMULATED"))
        assert newest != first and newest in tokens and slack.oauth.refreshes == 1
        clock.advance(hours=1)  # the first token has expired; the stored one is the new
        assert slack.oauth.refusal(first) == "token_expired" and slack.oauth.refusal(str(newest)) is None
    finally:
        store_one.close()
        store_two.close()


def test_a_failing_refresh_keeps_the_old_token_and_is_retried(rotating, tmp_path):
    slack, clock = rotating
    installations, store = replica(slack, f"sqlite:///{tmp_path / 'bot.db'}", Fernet.generate_key().decode(), clock)

    async def run() -> None:
        first = await install_rotating(slack, installations)
        clock.advance(hours=11, minutes=30)
        slack.oauth.fail_next_refresh("internal_error")
        assert await installations.token_for(None, "T0EMULATED") == first  # kept, and it still works
        assert slack.oauth.refreshes == 0 and slack.oauth.refusal(first) is None
        assert await installations.token_for(None, "T0EMULATED") == first  # not before RETRY_SECONDS
        clock.advance(seconds=10)
        renewed = await installations.token_for(None, "T0EMULATED")
        assert renewed != first and slack.oauth.refreshes == 1 and slack.oauth.refusal(str(renewed)) is None
        clock.advance(hours=1)  # past the first token's expiry: the stored token is the new one
        assert await installations.token_for(None, "T0EMULATED") == renewed

    try:
        asyncio.run(run())
    finally:
        store.close()


def test_a_token_already_expired_is_refreshed_before_it_is_used(rotating, tmp_path):
    slack, clock = rotating
    installations, store = replica(slack, f"sqlite:///{tmp_path / 'bot.db'}", Fernet.generate_key().decode(), clock)

    async def run() -> None:
        first = await install_rotating(slack, installations)
        clock.advance(hours=13)  # a quiet night: nothing refreshed it
        assert slack.oauth.refusal(first) == "token_expired"
        renewed = await installations.token_for(None, "T0EMULATED")
        assert renewed != first and slack.oauth.refusal(str(renewed)) is None
        assert await installations.refresh_due() == 0  # fresh again: the periodic job has nothing to do

    try:
        asyncio.run(run())
    finally:
        store.close()


def test_the_bot_scopes_are_the_manifests():
    import yaml

    manifest = yaml.safe_load((Path(__file__).parents[3] / "manifest.yaml").read_text())
    assert tuple(sorted(manifest["oauth_config"]["scopes"]["bot"])) == BOT_SCOPES
    assert set(SCOPE_WORDS) == set(BOT_SCOPES)


def test_doctor_says_the_mode_and_whether_an_installation_exists(running):
    from bot.doctor import FIX_NO_INSTALLATION, Check, check_installations

    name = "slack installs (oauth mode)"
    assert check_installations(running.settings) == Check(
        name, "warn", "OAuth mode; no workspace has installed the app yet", FIX_NO_INSTALLATION
    )
    install(running)
    assert check_installations(running.settings) == Check(name, "ok", "OAuth mode; installed in 1 workspace(s): T0EMULATED")
    lacking = running.settings.model_copy(update={"slack_state_secret": None})
    assert check_installations(lacking).status == "fail"


def test_a_rotating_token_is_refreshed_before_it_expires_while_commands_keep_coming(running, caplog):
    caplog.set_level(logging.DEBUG)  # slack-sdk logs requests and answers at DEBUG: no token may be in them
    running.slack.oauth.token_rotation = True
    install(running)
    [first] = list(running.slack.oauth._tokens)
    recorder = running.slack.recorder
    for hours in (6, 5, 1, 1):  # 6 h, 11 h (within 120 minutes of expiry: refreshed), 12 h, 13 h
        running.clock.advance(hours=hours)
        recorder.clear()
        sent = slash_command(running, "usage 7d", user_id="U0MANAGER")
        assert (sent.status_code, sent.text) == (200, "")
        [reply] = recorder.wait_for(lambda sent=sent: recorder.responses(sent.headers["x-response-url-id"]))
        assert reply.payload["blocks"]
        assert {c.response.get("error") for c in recorder.calls()} <= {None, "users_not_found"}  # none failed
    assert (running.slack.oauth.refresh_calls, running.slack.oauth.refreshes) == (1, 1)
    assert running.slack.oauth.refusal(first) == "token_expired"
    secrets = [*running.slack.oauth._tokens, *running.slack.oauth.refresh_tokens_issued]
    assert len(secrets) == 4 and [s for s in secrets if s in caplog.text] == []


def test_a_job_outside_a_request_posts_with_the_installation(running):
    install(running)

    async def post() -> object:
        return await running.bot.services.slack.post("C0GENERAL", {"text": "digest", "blocks": []})

    posted = asyncio.run(post())
    assert getattr(posted, "channel", None) == "C0GENERAL"
    assert [m.text for m in running.slack.recorder.messages("C0GENERAL")][-1] == "digest"
