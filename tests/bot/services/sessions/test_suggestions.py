"""bot.services.sessions.suggestions: the Messages tab's prompts, made from a person's own sessions,
offered once a day across replicas (two bots' stores on one database, SQLite and PostgreSQL), with
the Slack emulator on loopback."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence

import pytest

from bot.services.sessions.context import ThreadContext, with_context
from bot.services.sessions.store import SessionLink, SessionStore
from bot.services.sessions.suggestions import GENERAL, PROMPTS_TITLE, SuggestedPrompts, Suggestion, suggestions_for
from bot.slack import SlackGateway, web_client
from bot.store import Store
from sandbox.slack_emulator import SlackEmulator, dm_channel_id
from tests.conftest import postgres_url

DAY = dt.date(2026, 11, 22)


def row(user: str, prompt: str, cwd: str | None = None) -> SessionLink:
    return SessionLink(
        id=1, start_key="k", state="started", session_id="s", slack_user=user, user_email=None, channel="C0ENG", thread_ts=None,
        parent_ts=None, origin="mention", computer_id="c", computer_name="ci", cwd=cwd, model=None, prompt=prompt, status="idle",
        title=None, message_count=0,
    )  # fmt: skip


def test_prompts_from_the_persons_own_requests_and_directories() -> None:
    rows = [
        row("U0MEMBER", with_context("fix the flaky login test", ThreadContext(("[t] bob: it fails",))), "~/src/web"),
        row("U0OWNER", "not hers", "~/src/secret"),
        row("U0MEMBER", "fix the flaky login test", "~/src/web"),
        row("U0MEMBER", "bump   the lockfile", "~/src/api/"),
    ]
    assert suggestions_for(rows, "U0MEMBER") == [
        Suggestion("Again: fix the flaky login test", "fix the flaky login test"),  # the thread's context left out
        Suggestion("Again: bump the lockfile", "bump the lockfile"),
        Suggestion("Tests in web", "cwd=~/src/web Run the tests and fix what fails"),
        Suggestion("Tests in api", "cwd=~/src/api/ Run the tests and fix what fails"),
    ]
    assert suggestions_for([], "U0GUEST") == [Suggestion(t, m) for t, m in GENERAL]


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("deliveries", "agent_sessions")


def fallback(pairs: Sequence[tuple[str, str]]) -> dict:
    return {"text": "prompts", "blocks": []}


async def test_two_replicas_offer_the_prompts_once_a_day(database_url) -> None:
    with SlackEmulator() as slack:
        gateway = SlackGateway(web_client(slack.bot_token, slack.api_url))
        stores = [Store(database_url, now=lambda: dt.datetime(2026, 11, 22, 9, tzinfo=dt.UTC)) for _ in range(2)]
        days = iter([DAY, DAY, DAY + dt.timedelta(days=1)])
        replicas = [
            SuggestedPrompts(sessions=SessionStore(s), store=s, slack=gateway, today=lambda: next(days), fallback=fallback) for s in stores
        ]
        dm = dm_channel_id("U0MEMBER")
        offered = await asyncio.gather(*(r.offer("U0MEMBER", dm) for r in replicas))
        assert sorted(offered) == ["claimed", "prompts"]
        assert len(slack.recorder.calls("assistant.threads.setSuggestedPrompts")) == 1
        assert slack.web_api.agent_messaging.prompts[dm]["title"] == PROMPTS_TITLE
        assert await replicas[0].offer("U0MEMBER", dm) == "prompts"  # the next day: again
        for store in stores:
            store.close()
