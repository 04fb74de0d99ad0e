"""Enterprise Grid end to end (issue #31, part 2): the bot on loopback against the Slack emulator's Grid
(two workspaces of enterprise ``E0GRID``: ``T0EMULATED`` with alice, bob, carol, dave; ``T0SECOND``
with erin and frank) and the sandbox Agent API, installed org-wide or in each workspace through OAuth.

What each call went as is the emulator's record of the token it carried (``slack.oauth.calls``:
``(method, owner, arguments)``, owner ``E0GRID`` for the org-wide token, a team ID for a workspace's).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
import sqlalchemy as sa
from cryptography.fernet import Fernet

from bot.api import AgentClient
from bot.installations import slack_bots, slack_conversation_teams, slack_installation_states
from bot.roles import SOURCE_ORG_USER, SOURCE_ROLES_FILE, ResolvedUser, Role
from bot.services.accounts.service import LinkStatus
from bot.slack import NO_TOKEN, Posted, SlackFailure
from bot.store import Store
from bot.wiring import build_clients, create_bot, digest_service
from formatters.accounts import whoami_message
from formatters.notices import other_workspace_message
from formatters.users import MORE_ACTION
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import Grid, SlackEmulator
from sandbox.slack_emulator.client_side import SlackClientSide, SlackRequest
from sandbox.slack_emulator.grid import GridClientSide
from tests.e2e.bot.test_oauth_installs import T0, Clock, free_port, oauth_settings, wait_until

ROLES = "roles:\n  owners: [alice@example.com]\n  managers: [bob@example.com, frank@example.com]\n"
FIRST, SECOND = "T0EMULATED", "T0SECOND"


class GridRunning:
    def __init__(self, slack: SlackEmulator, bot: Any, url: str, clock: Clock, settings: Any, sandbox_url: str) -> None:
        self.slack, self.bot, self.url, self.clock, self.settings, self.sandbox_url = slack, bot, url, clock, settings, sandbox_url
        self.client: GridClientSide = slack.grid_client(url)

    @property
    def calls(self) -> list[tuple[str, str | None, dict[str, Any]]]:
        return self.slack.oauth.calls  # type: ignore[attr-defined, no-any-return]


@pytest.fixture
def jobs() -> bool:
    """Whether the bot's periodic jobs tick (a test parametrizes ``jobs`` True for the session follower)."""
    return False


@pytest.fixture
def grid(tmp_path: Path, jobs: bool) -> Iterator[GridRunning]:
    clock = Clock()
    sandbox = serve_in_thread(create_app(SandboxConfig(today=T0.date())))
    slack = SlackEmulator(grid=Grid()).start()
    slack.oauth.clock = clock.epoch
    roles = tmp_path / "roles.yaml"
    roles.write_text(ROLES)
    port = free_port()
    settings = oauth_settings(slack, sandbox.url, f"sqlite:///{tmp_path / 'bot.db'}", Fernet.generate_key().decode(), roles)
    settings.slack_redirect_uri = f"http://127.0.0.1:{port}/slack/oauth_redirect"
    agent = AgentClient(base_url=sandbox.url, api_key=SandboxConfig().api_key, today=lambda: T0.date())
    settings.sessions_as = "bot"  # sessions start with the bot's key: nobody needs to link one here
    bot = create_bot(settings, agent=agent, now=clock)
    bot.run_jobs = jobs
    server = serve_in_thread(bot.asgi(), port=port)
    running = GridRunning(slack, bot, server.url, clock, settings, sandbox.url)
    try:
        yield running
    finally:
        running.client.close()
        server.stop()
        slack.stop()
        sandbox.stop()
        bot.services.store.close()


def install(running: GridRunning, team: str | None = None) -> None:
    """An org admin installs the app org-wide (``team`` None), or someone in workspace ``team``."""
    page = httpx.get(f"{running.url}/slack/install")
    link = re.search(r'href="([^"]+)"', page.text)
    assert page.status_code == 200 and link is not None
    cookie = page.headers["set-cookie"].split(";")[0]
    url = link.group(1).replace("&amp;", "&") + (f"&{urlencode({'team': team})}" if team else "")
    authorized = httpx.get(url, follow_redirects=False)
    assert authorized.status_code == 302
    done = httpx.get(authorized.headers["location"], headers={"Cookie": cookie})
    assert done.status_code == 200


def command(running: GridRunning, text: str, *, user: str, channel: str) -> dict[str, Any]:
    """``/agent text`` by ``user`` in ``channel``: acked empty, then the reply on the response_url."""
    sent = running.client.send_slash_command(text, user_id=user, channel_id=channel)
    assert (sent.status_code, sent.body) == (200, "")
    recorder = running.slack.recorder
    [reply] = recorder.wait_for(lambda: recorder.responses(sent.response_url_id))
    return dict(reply.payload)


def refused(running: GridRunning, text: str, *, user: str, channel: str) -> bool:
    sent = running.client.send_slash_command(text, user_id=user, channel_id=channel)
    return sent.status_code == 200 and bool(sent.body) and sent.json() == other_workspace_message()


def whoami(user: str, email: str, role: Role, source: str) -> dict[str, Any]:
    return whoami_message(ResolvedUser(user, email, role, source), LinkStatus(linked=False), "bot")


def shown(payload: dict[str, Any]) -> dict[str, Any]:
    return {"text": payload["text"], "blocks": payload["blocks"]}


def owners(running: GridRunning, method: str, **matching: str) -> list[str | None]:
    return [o for m, o, args in running.calls if m == method and all(args.get(k) == v for k, v in matching.items())]


def marks(running: GridRunning) -> list[tuple[str, str]]:
    with running.bot.services.store.engine.connect() as conn:
        table = slack_installation_states
        return sorted(tuple(r) for r in conn.execute(sa.select(table.c.key, table.c.revoked_reason).where(table.c.revoked_at.is_not(None))))


def bots(running: GridRunning) -> list[tuple[str | None, str | None, bool]]:
    with running.bot.services.store.engine.connect() as conn:
        columns = slack_bots.c.enterprise_id, slack_bots.c.team_id, slack_bots.c.is_enterprise_install
        return [tuple(r) for r in conn.execute(sa.select(*columns))]


def post_outside_a_request(running: GridRunning, channel: str) -> Posted | SlackFailure:
    """What a job does (a digest, an alert): a post through a fresh process's gateway (its own token
    source: nothing but the database known), no request being handled."""

    async def post() -> Posted | SlackFailure:
        store = Store(running.settings.database_url)
        try:
            clients = build_clients(running.settings, agent=AgentClient(base_url=running.sandbox_url, api_key="k"), store=store)
            return await clients.slack.post(channel, {"text": "from a job", "blocks": []})
        finally:
            store.close()

    return asyncio.run(post())


# --------------------------------------------------------------------------------------------- org-wide


def test_an_org_wide_install_is_the_enterprises_and_answers_people_of_both_workspaces_by_e_mail(grid):
    install(grid)
    assert bots(grid) == [("E0GRID", None, True)]
    assert shown(command(grid, "whoami", user="U0MANAGER", channel="C0GENERAL")) == whoami(
        "U0MANAGER", "bob@example.com", Role.manager, SOURCE_ROLES_FILE
    )
    assert shown(command(grid, "whoami", user="U1FRANK", channel="C1GENERAL")) == whoami(
        "U1FRANK", "frank@example.com", Role.manager, SOURCE_ROLES_FILE
    )  # the roles file holds for the second workspace: people matched by e-mail
    assert shown(command(grid, "whoami", user="U1ERIN", channel="C1GENERAL")) == whoami(
        "U1ERIN", "erin@example.com", Role.member, SOURCE_ORG_USER
    )  # one platform organization (one AGENT_API_KEY) for every workspace
    assert set(owners(grid, "users.info")) == {"E0GRID"}
    with grid.bot.services.store.engine.connect() as conn:  # where each channel and person was seen
        seen = {r.id: (r.enterprise_id, r.team_id) for r in conn.execute(sa.select(slack_conversation_teams))}
    assert seen == {
        "C0GENERAL": ("E0GRID", FIRST),
        "U0MANAGER": ("E0GRID", FIRST),
        "C1GENERAL": ("E0GRID", SECOND),
        "U1FRANK": ("E0GRID", SECOND),
        "U1ERIN": ("E0GRID", SECOND),
    }


def test_clicks_and_events_from_both_workspaces_are_answered(grid):
    install(grid)
    recorder = grid.slack.recorder
    for user, channel in (("U0MANAGER", "C0GENERAL"), ("U1FRANK", "C1GENERAL")):
        screen = command(grid, "users", user=user, channel=channel)
        clicked = grid.client.send_block_action(
            MORE_ACTION, user_id=user, channel_id=channel, message_ts="1.000001", message=screen, is_ephemeral=True
        )
        assert clicked.status_code == 200
        [page] = recorder.wait_for(lambda clicked=clicked: recorder.responses(clicked.response_url_id))
        assert page.payload["blocks"] and page.payload["blocks"] != screen["blocks"]  # the next page
    opened = grid.client.send_app_home_opened("U1ERIN")
    assert opened.status_code == 200
    wait_until(lambda: recorder.home("U1ERIN"), "erin's Home tab")
    assert owners(grid, "views.publish", user_id="U1ERIN") == ["E0GRID"]


def test_an_uninstall_of_the_org_wide_install_stops_every_workspace_and_deletes_nothing(grid):
    install(grid)
    command(grid, "whoami", user="U1FRANK", channel="C1GENERAL")
    assert grid.client.send_app_uninstalled().status_code == 200
    assert wait_until(lambda: marks(grid), "the app_uninstalled listener") == [("E0GRID:-", "app_uninstalled")]
    grid.slack.oauth.revoke_org()  # type: ignore[attr-defined]
    assert refused(grid, "whoami", user="U0MANAGER", channel="C0GENERAL")
    assert refused(grid, "whoami", user="U1FRANK", channel="C1GENERAL")
    assert post_outside_a_request(grid, "C1GENERAL") == SlackFailure("chat.postMessage", NO_TOKEN, True)
    assert bots(grid) == [("E0GRID", None, True)]  # kept
    install(grid)  # an org admin installs it again: both workspaces served again
    assert shown(command(grid, "whoami", user="U1FRANK", channel="C1GENERAL"))["blocks"]
    assert shown(command(grid, "whoami", user="U0MANAGER", channel="C0GENERAL"))["blocks"]


def test_a_request_from_an_enterprise_or_workspace_without_an_installation_is_refused(grid):
    install(grid, team=FIRST)  # the first workspace only
    assert refused(grid, "whoami", user="U1FRANK", channel="C1GENERAL")  # the second holds none
    grid.slack.recorder.clear()
    calls = len(grid.calls)
    fields = {
        "token": grid.slack.verification_token,
        "team_id": "T0ELSE",
        "team_domain": "else",
        "enterprise_id": "E0ELSE",
        "enterprise_name": "Another Grid",
        "channel_id": "C9ELSE",
        "channel_name": "else",
        "user_id": "U9ELSE",
        "user_name": "someone",
        "command": "/agent",
        "text": "help",
        "api_app_id": grid.slack.directory.bot.app_id,
        "is_enterprise_install": "true",
        "response_url": "http://127.0.0.1:9/none",
        "trigger_id": "trigger-else",
    }
    with SlackClientSide(grid.slack, grid.url) as client:  # as sent: not rewritten for the Grid
        sent = client.send(SlackRequest("slash_command", urlencode(fields), "application/x-www-form-urlencoded", fields))
    assert (sent.status_code, sent.json()) == (200, other_workspace_message())
    assert len(grid.calls) == calls  # nothing was asked of Slack


# ---------------------------------------------------------------------------- one install per workspace


def test_each_workspace_installed_on_its_own_is_answered_with_its_own_token(grid):
    install(grid, team=FIRST)
    install(grid, team=SECOND)
    assert sorted(bots(grid)) == [("E0GRID", FIRST, False), ("E0GRID", SECOND, False)]
    assert shown(command(grid, "whoami", user="U1FRANK", channel="C1GENERAL")) == whoami(
        "U1FRANK", "frank@example.com", Role.manager, SOURCE_ROLES_FILE
    )
    assert shown(command(grid, "whoami", user="U0MEMBER", channel="C0GENERAL")) == whoami(
        "U0MEMBER", "carol@example.com", Role.member, SOURCE_ORG_USER
    )
    assert owners(grid, "users.info", user="U1FRANK") == [SECOND]
    assert owners(grid, "users.info", user="U0MEMBER") == [FIRST]


def test_a_digest_is_posted_into_each_workspaces_channel_with_that_workspaces_token(grid):
    install(grid, team=FIRST)
    install(grid, team=SECOND)
    for user, channel in (("U0MANAGER", "C0DIGEST"), ("U1FRANK", "C1DIGEST")):
        answer = command(grid, "digest subscribe at=00:00 days=daily", user=user, channel=channel)
        assert answer["text"].startswith(f":white_check_mark: <#{channel}> gets the daily digest at 00:00 UTC"), answer["text"]
    grid.calls.clear()
    grid.slack.recorder.clear()

    async def tick() -> object:  # as `agent-bot digest tick` does: its own process, its own clients
        store = Store(grid.settings.database_url)
        agent = AgentClient(base_url=grid.sandbox_url, api_key=SandboxConfig().api_key, today=lambda: T0.date())
        try:
            clients = build_clients(grid.settings, agent=agent, store=store, now=grid.clock)
            return await digest_service(agent=agent, store=store, slack=clients.slack, now=grid.clock).tick()
        finally:
            await agent.aclose()
            store.close()

    report = asyncio.run(tick())
    assert getattr(report, "landed", None) is True
    assert owners(grid, "chat.postMessage", channel="C0DIGEST") == [FIRST]
    assert owners(grid, "chat.postMessage", channel="C1DIGEST") == [SECOND]
    assert {m.channel for m in grid.slack.recorder.messages()} == {"C0DIGEST", "C1DIGEST"}
    assert {c.response.get("error") for c in grid.slack.recorder.calls()} <= {None, "users_not_found"}  # none failed


def test_a_job_finds_the_workspace_of_a_channel_no_request_has_shown(grid):
    install(grid, team=FIRST)
    install(grid, team=SECOND)
    posted = post_outside_a_request(grid, "C1GENERAL")  # never in a request: asked of each installation
    assert isinstance(posted, Posted) and posted.channel == "C1GENERAL"
    assert owners(grid, "chat.postMessage", channel="C1GENERAL") == [SECOND]
    with grid.bot.services.store.engine.connect() as conn:
        row = conn.execute(sa.select(slack_conversation_teams).where(slack_conversation_teams.c.id == "C1GENERAL")).one()
    assert (row.enterprise_id, row.team_id) == ("E0GRID", SECOND)  # remembered: the next job asks no more


def test_an_uninstall_of_one_workspace_stops_work_there_and_the_other_goes_on(grid):
    install(grid, team=FIRST)
    install(grid, team=SECOND)
    command(grid, "whoami", user="U1FRANK", channel="C1DIGEST")
    command(grid, "whoami", user="U0MANAGER", channel="C0DIGEST")
    with grid.client.in_workspace(SECOND):
        assert grid.client.send_app_uninstalled().status_code == 200
    grid.slack.oauth.revoke(SECOND)
    assert wait_until(lambda: marks(grid), "the app_uninstalled listener") == [(f"E0GRID:{SECOND}", "app_uninstalled")]
    assert refused(grid, "whoami", user="U1FRANK", channel="C1GENERAL")
    assert shown(command(grid, "whoami", user="U0MANAGER", channel="C0GENERAL")) == whoami(
        "U0MANAGER", "bob@example.com", Role.manager, SOURCE_ROLES_FILE
    )
    assert isinstance(post_outside_a_request(grid, "C0DIGEST"), Posted)  # the first workspace's jobs go on
    assert post_outside_a_request(grid, "C1DIGEST") == SlackFailure("chat.postMessage", NO_TOKEN, True)
    assert asyncio.run(grid.bot.services.store.slack_paused(grid.clock())) is None  # no pause of the whole bot
    assert len(bots(grid)) == 2  # nothing deleted


def test_tokens_revoked_in_one_workspace_stops_that_workspace_only(grid):
    install(grid, team=FIRST)
    install(grid, team=SECOND)
    with grid.client.in_workspace(FIRST):
        assert grid.client.send_tokens_revoked().status_code == 200
    assert wait_until(lambda: marks(grid), "the tokens_revoked listener") == [(f"E0GRID:{FIRST}", "tokens_revoked")]
    assert refused(grid, "whoami", user="U0MANAGER", channel="C0GENERAL")
    assert shown(command(grid, "whoami", user="U1ERIN", channel="C1GENERAL"))["blocks"]


def test_an_org_admin_removing_the_org_wide_install_from_one_workspace_stops_work_there_only(grid):
    install(grid)
    command(grid, "whoami", user="U1FRANK", channel="C1GENERAL")
    assert grid.client.send_team_access([SECOND], granted=False).status_code == 200
    assert wait_until(lambda: marks(grid), "the team_access_revoked listener") == [(f"E0GRID:{SECOND}", "team_access_revoked")]
    assert refused(grid, "whoami", user="U1FRANK", channel="C1GENERAL")
    assert shown(command(grid, "whoami", user="U0MANAGER", channel="C0GENERAL"))["blocks"]
    assert post_outside_a_request(grid, "C1GENERAL") == SlackFailure("chat.postMessage", NO_TOKEN, True)
    assert isinstance(post_outside_a_request(grid, "C0GENERAL"), Posted)
    assert grid.client.send_team_access([SECOND], granted=True).status_code == 200  # added back
    wait_until(lambda: not marks(grid), "the team_access_granted listener")
    assert shown(command(grid, "whoami", user="U1FRANK", channel="C1GENERAL")) == whoami(
        "U1FRANK", "frank@example.com", Role.manager, SOURCE_ROLES_FILE
    )


def test_doctor_names_an_org_wide_install_and_the_workspaces_installed_on_their_own(grid):
    from bot.doctor import Check, check_installations

    name = "slack installs (oauth mode)"
    install(grid)
    assert check_installations(grid.settings) == Check(name, "ok", "OAuth mode; installed org-wide in E0GRID")
    install(grid, team=SECOND)
    assert check_installations(grid.settings) == Check(
        name, "ok", "OAuth mode; installed org-wide in E0GRID; installed in 1 workspace(s): T0SECOND"
    )


@pytest.mark.parametrize("jobs", [True])
def test_a_session_started_in_the_second_workspace_is_followed_in_its_thread_with_that_workspaces_token(grid):
    install(grid, team=SECOND)
    install(grid, team=FIRST)  # installed last: not what the follower goes with
    grid.client.send_slash_command("session start computer=ci count the open TODOs", user_id="U1ERIN", channel_id="C1GENERAL")
    recorder = grid.slack.recorder

    def parent() -> Any:
        return next((m for m in recorder.messages("C1GENERAL") if m.user == "U0AGENTBOT" and not m.thread_ts), None)

    started = recorder.wait_for(parent, timeout=15, what="the session's parent message")

    def answered() -> Any:  # the agent's answer, posted by the follower (a job: no request)
        grid.clock.advance(seconds=0.05)  # the follower's next poll comes due on the bot's clock
        thread = [m for m in recorder.messages("C1GENERAL", started.ts) if m.ts != started.ts and m.user == "U0AGENTBOT"]
        return thread if any("TODO" in (m.text or "") for m in thread) else None

    wait_until(answered, "the agent's answer in the thread", timeout=30)
    posts = [o for m, o, args in grid.calls if m in ("chat.postMessage", "chat.update") and args.get("channel") == "C1GENERAL"]
    assert posts and set(posts) == {SECOND}


def test_a_channel_of_the_other_workspace_named_in_a_request_goes_with_that_workspaces_installation(grid):
    install(grid, team=FIRST)
    install(grid, team=SECOND)
    answer = command(grid, "digest subscribe <#C1DIGEST|second-digest> at=00:00 days=daily", user="U0MANAGER", channel="C0GENERAL")
    assert answer["text"].startswith(":white_check_mark: <#C1DIGEST> gets the daily digest at 00:00 UTC"), answer["text"]
    asked = [(m, o) for m, o, args in grid.calls if args.get("channel") == "C1DIGEST"]
    assert asked and asked[-1] == ("conversations.info", SECOND)  # found with each installation in turn: the second's


def test_the_org_wide_token_rotates_once_while_both_workspaces_keep_being_answered(grid):
    grid.slack.oauth.token_rotation = True
    install(grid)
    asked = [(6, "U0MANAGER", "C0GENERAL"), (5, "U1FRANK", "C1GENERAL"), (2, "U1ERIN", "C1GENERAL")]
    for hours, user, channel in asked:
        grid.clock.advance(hours=hours)  # 6 h, 11 h (within 120 minutes of expiry: refreshed), 13 h (the first token expired)
        assert shown(command(grid, "whoami", user=user, channel=channel))["blocks"]
    assert (grid.slack.oauth.refresh_calls, grid.slack.oauth.refreshes) == (1, 1)
    assert {grid.slack.oauth.owner(t) for t in grid.slack.oauth._tokens} == {"E0GRID"}  # type: ignore[attr-defined]
    assert {o for m, o, _ in grid.calls if m == "users.info"} == {"E0GRID"}
    assert bots(grid)[-1] == ("E0GRID", None, True)
