"""Where each channel and person is (:class:`bot.installations.TeamsSeen`, Enterprise Grid): two replicas
learning the same IDs at once write one row each (SQLite and PostgreSQL), a process that starts later
reads them from the database, a channel moved to another workspace is learned again; and which
argument of a Web API call names what it acts on (:func:`bot.installations.subject_of`)."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
import sqlalchemy as sa

from bot.installations import TeamsSeen, slack_conversation_teams, subject_of
from bot.store import Store
from tests.conftest import postgres_url

NOW = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'seen.db'}"
    return postgres_url("slack_conversation_teams", upgraded=True)


def rows(store: Store) -> list[tuple[str, str | None, str | None]]:
    with store.engine.connect() as conn:
        table = slack_conversation_teams
        return sorted(tuple(r) for r in conn.execute(sa.select(table.c.id, table.c.enterprise_id, table.c.team_id)))


def test_two_replicas_learning_the_same_ids_at_once_write_each_once_and_a_later_process_reads_them(database_url):
    first, second = Store(database_url), Store(database_url)
    try:
        one = TeamsSeen(engine=first.engine, run=first.run, now=lambda: NOW)
        two = TeamsSeen(engine=second.engine, run=second.run, now=lambda: NOW)

        async def both() -> None:
            await asyncio.gather(
                one.learn(["C1GENERAL", "U1FRANK", None], "E0GRID", "T0SECOND"),
                two.learn(["U1FRANK", "C1GENERAL"], "E0GRID", "T0SECOND"),
            )

        asyncio.run(both())
        assert rows(first) == [("C1GENERAL", "E0GRID", "T0SECOND"), ("U1FRANK", "E0GRID", "T0SECOND")]
        later = TeamsSeen(engine=first.engine, run=first.run, now=lambda: NOW)  # nothing in its memory
        assert asyncio.run(later.team_of("C1GENERAL")) == ("E0GRID", "T0SECOND")
        assert asyncio.run(later.team_of("C0NEVER")) is None
        asyncio.run(later.learn(["C1GENERAL"], "E0GRID", "T0EMULATED"))  # Slack moved the channel
        assert asyncio.run(TeamsSeen(engine=first.engine, run=first.run, now=lambda: NOW).team_of("C1GENERAL")) == (
            "E0GRID",
            "T0EMULATED",
        )
        asyncio.run(later.learn(["C9ORG"], "E0GRID", None))  # an org-level request names no workspace: nothing to note
        assert asyncio.run(later.team_of("C9ORG")) is None
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize(
    ("arguments", "subject"),
    [
        ({"channel": "C1GENERAL", "user": "U1FRANK"}, "C1GENERAL"),  # chat.postEphemeral: the channel
        ({"user": "U1FRANK"}, "U1FRANK"),  # users.info
        ({"user_id": "W0ORGUSER", "view": {}}, "W0ORGUSER"),  # views.publish
        ({"users": "U0MEMBER,U1ERIN"}, "U0MEMBER"),  # conversations.open
        ({"channel": "D1FRANK", "ts": "1.2"}, "D1FRANK"),  # a DM
        ({"email": "frank@example.com"}, None),  # users.lookupByEmail names nobody
        ({"trigger_id": "1.2.3", "view": {}}, None),  # views.open
        ({"channel": "#general"}, None),  # not an ID
    ],
)
def test_the_argument_that_names_what_a_call_acts_on(arguments, subject):
    assert subject_of(arguments) == subject


async def test_the_last_token_a_task_was_given_is_its_own(tmp_path):
    """Two requests of two workspaces at once: each task's file download reads its own workspace's token."""
    from bot.installations import InstalledTokens

    class Two:
        async def active_teams(self):
            return [("E0GRID", "T0EMULATED"), ("E0GRID", "T0SECOND")]

        async def token_for(self, enterprise_id, team_id):
            return f"xoxb-{team_id}"

    from bot.installations import ACTING_TEAM

    tokens = InstalledTokens(Two())  # type: ignore[arg-type]

    async def request(team: str, wait: asyncio.Event, go: asyncio.Event) -> str:
        ACTING_TEAM.set(("E0GRID", team))
        await tokens.token()
        wait.set()
        await go.wait()  # the other request's token is given meanwhile
        return tokens.last()

    first, second, go = asyncio.Event(), asyncio.Event(), asyncio.Event()
    one = asyncio.create_task(request("T0EMULATED", first, go))
    await first.wait()
    two = asyncio.create_task(request("T0SECOND", second, go))
    await second.wait()
    go.set()
    assert (await one, await two) == ("xoxb-T0EMULATED", "xoxb-T0SECOND")
