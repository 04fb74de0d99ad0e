"""The organization e-mails the sync records (``analytics_user_emails``): everyone the walk meets, the
whole organization once a day (:data:`DIRECTORY_REFRESH`), nothing in between when no stored user
lacks a name."""

from __future__ import annotations

from sqlalchemy import select

from bot.services.analytics_store.sync import DIRECTORY_REFRESH
from bot.services.analytics_store.tables import analytics_user_emails
from bot.store import Store
from tests.bot.services.analytics_store.conftest import Clock, client_of, sync_of


def _recorded(store: Store) -> dict[str, str | None]:
    with store.engine.connect() as conn:
        return {user_id: email for user_id, email in conn.execute(select(analytics_user_emails.c.user_id, analytics_user_emails.c.email))}


async def test_the_whole_organization_is_recorded_once_a_day(sandbox, store):
    client = client_of(sandbox)
    clock = Clock()
    organization = {u.id: u.email or None async for u in client.iter_organization_users()}
    first = await sync_of(client, store, clock, days=2).run()
    assert _recorded(store) == organization  # everyone, not only those analytics sent without an e-mail
    assert first.requests > 14  # two days of seven answers, then the walk
    clock.at += DIRECTORY_REFRESH / 2
    assert (await sync_of(client, store, clock, days=2).run()).requests == 0  # nothing to fetch, nothing to name
    clock.at += DIRECTORY_REFRESH / 2
    again = await sync_of(client, store, clock, days=2).run()
    assert again.requests >= 1 and again.stored == []  # the daily walk
    assert _recorded(store) == organization
    await client.aclose()
