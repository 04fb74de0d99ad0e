"""The store of landed analytics days (issue #30): every usage reader reads stored days and asks the
API only for the days not stored yet.

The analytics are aggregated once a day by the platform's batch ("What the service does",
analytics-and-readiness-api.md), so a landed day is fixed: it is fetched once (by one replica), kept
in the bot's database, and read from there by ``/agent usage`` in every form, the digest, the usage
alerts and the Home. Parts:

- :mod:`.tables`: the tables (migrations 0015 and 0018) and the claims of a day (:data:`DAY_CLAIMS`);
- :mod:`.store`: :class:`AnalyticsStore` (write a day in one transaction, read rows back as the
  client's types; :func:`check_day`, the validation a day passes before it is stored);
- :mod:`.sync`: :class:`AnalyticsSync` (the start-up backfill and the periodic pass, paced, resumable,
  the one re-check; ``agent-bot analytics sync``);
- :mod:`.reader`: :class:`StoredAnalytics`, the one function the readers share, :class:`Gaps`
  (days that could not be had; an outage) and :class:`DaysNotHad`, its frozen copy for a message;
  :func:`tracked` collects them around a reply, a digest, an alert pass or a Home.

The rules are in docs/operations.md ("The store of landed analytics days").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

from bot.services.analytics_store.reader import DaysNotHad, Gaps, StoredAnalytics, runs
from bot.services.analytics_store.store import AnalyticsStore, DayAnswers, InvalidDay, StoreStatus, check_day
from bot.services.analytics_store.sync import RECHECK_AFTER, RECHECK_DAYS, RETRY_AFTER, AnalyticsSync, Pacer, SyncReport
from bot.services.analytics_store.tables import (
    DAY_CLAIMS,
    analytics_claims,
    analytics_day_clients,
    analytics_day_models,
    analytics_day_tools,
    analytics_day_users,
    analytics_days,
    analytics_user_ranges,
)

if TYPE_CHECKING:
    from bot.api import AgentClient
    from bot.store import Store

SYNC_JOB = "analytics.sync"
"""The periodic job that fills the store (:meth:`AnalyticsSync.tick`); its first tick is the start-up backfill."""


def reading(agent: AgentClient, store: Store) -> AgentClient:
    """``agent`` reading analytics through the store of ``store``'s database (:class:`StoredAnalytics`),
    typed as the client it stands for (it has the client's analytics methods and hands the rest to
    it); ``agent`` itself when it already does."""
    if isinstance(agent, StoredAnalytics):
        return cast("AgentClient", agent)
    return cast("AgentClient", StoredAnalytics(agent, AnalyticsStore(store)))


def stored_analytics(agent: AgentClient) -> StoredAnalytics | None:
    """The :class:`StoredAnalytics` ``agent`` is, or None for a bare client."""
    return agent if isinstance(agent, StoredAnalytics) else None


@contextlib.contextmanager
def tracked(agent: AgentClient) -> Iterator[Gaps]:
    """The :class:`bot.services.analytics_store.Gaps` of the analytics reads inside the block, when
    ``agent`` reads through the store of landed days (:meth:`StoredAnalytics.tracking
    <bot.services.analytics_store.StoredAnalytics.tracking>`: a platform that does not answer is an
    outage the stored days stand in for, instead of its error); an empty one that stays empty for a
    bare client (its errors are raised as before). The caller decides what an outage means to it
    (:meth:`Gaps.check <bot.services.analytics_store.Gaps.check>` raises the API's error when no
    stored day was read)."""
    analytics = stored_analytics(agent)
    if analytics is None:
        yield Gaps()
        return
    with analytics.tracking() as gaps:
        yield gaps


__all__ = [
    "DAY_CLAIMS",
    "RECHECK_AFTER",
    "RECHECK_DAYS",
    "RETRY_AFTER",
    "SYNC_JOB",
    "AnalyticsStore",
    "AnalyticsSync",
    "DayAnswers",
    "DaysNotHad",
    "Gaps",
    "InvalidDay",
    "Pacer",
    "StoreStatus",
    "StoredAnalytics",
    "SyncReport",
    "analytics_claims",
    "analytics_day_clients",
    "analytics_day_models",
    "analytics_day_tools",
    "analytics_day_users",
    "analytics_days",
    "analytics_user_ranges",
    "check_day",
    "reading",
    "runs",
    "stored_analytics",
    "tracked",
]
