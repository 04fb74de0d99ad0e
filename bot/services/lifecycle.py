"""The app's lifecycle as Slack reports it: uninstalled, token revoked, rate limited.

Slack docs followed: ``app_uninstalled`` and ``tokens_revoked`` (Events API, subscribed in the
manifest): the bot token no longer works, every Web API call would answer ``invalid_auth`` /
``token_revoked``; ``app_rate_limited`` (sent to every app, no subscription; a top-level payload
with ``minute_rate_limited``, the epoch second a whole minute starts): the app went over the Events
API's 30,000 events an hour from one workspace.

What the bot does (:class:`SlackLifecycle`; the listeners are :mod:`handlers.lifecycle`):

- revoked or uninstalled, in OAuth mode: the installation is marked revoked (kept, not deleted:
  :mod:`bot.installations`; its requests are refused until it is installed again), and nothing
  else: the workspace's calls find no token (``not_authed``) while the other workspaces (other
  installations) go on; the org-wide installation's mark stops every workspace it serves.
- revoked or uninstalled, one bot token: a ``revoked`` row in ``slack_pauses`` (:class:`bot.store.SlackPause`,
  shared by every replica) and one WARNING line; the periodic jobs that post and follow (session
  follower, digests, limits) skip their ticks (:meth:`SlackLifecycle.gate`). The row is cleared by
  :meth:`SlackLifecycle.check_token` when ``auth.test`` succeeds again: a periodic job that runs
  at every start-up (a reinstalled app's new token comes with a restart) and then every
  :data:`AUTH_CHECK_SECONDS`.
- rate limited: a ``rate_limited`` row until the end of the minute Slack named, and a WARNING line;
  the same jobs skip their ticks until then, and tick as usual after it.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from bot.slack import SlackFailure, SlackGateway
from bot.store import SlackPause, Store

logger = logging.getLogger(__name__)

REVOKED: Final = "revoked"
RATE_LIMITED: Final = "rate_limited"
AUTH_CHECK_JOB: Final = "slack.auth_check"
AUTH_CHECK_SECONDS: Final = 3600.0
"""How often ``auth.test`` checks whether a revoked token works again (also once at start-up)."""
RATE_LIMIT_MINUTE: Final = dt.timedelta(minutes=1)


class SlackLifecycle:
    """Records what Slack said about the app and holds back the posting jobs while it stands:
    ``store`` (the ``slack_pauses`` rows), ``slack`` (the gateway; ``auth.test``), ``now`` (the aware
    UTC clock)."""

    def __init__(self, *, store: Store, slack: SlackGateway, now: Callable[[], dt.datetime]) -> None:
        self.store = store
        self.slack = slack
        self.now = now

    async def revoked(self, reason: str) -> None:
        """The bot token was revoked or the app uninstalled (``reason``: the event type): stop
        posting and following until :meth:`check_token` sees the token work again."""
        tokens = getattr(self.slack, "tokens", None)  # the gateway's token source (a stand-in may have none)
        if tokens is not None and await tokens.revoked(reason):  # OAuth mode: that installation only (bot.installations)
            logger.warning("Slack %s: that installation's work stops; the other installations go on", reason)
            return
        await self.store.pause_slack(REVOKED, reason, self.now())
        logger.warning("Slack %s: the bot token no longer works; posting and following sessions stop until auth.test succeeds", reason)

    async def rate_limited(self, minute_rate_limited: int) -> dt.datetime:
        """Slack rate-limits the app's events in the minute starting at ``minute_rate_limited``
        (epoch seconds): the posting jobs skip their ticks until that minute has passed; returns
        when that is (aware UTC)."""
        until = dt.datetime.fromtimestamp(minute_rate_limited, dt.UTC) + RATE_LIMIT_MINUTE
        await self.store.pause_slack(RATE_LIMITED, "app_rate_limited", self.now(), until)
        logger.warning("Slack app_rate_limited: the app's events are limited; the jobs post nothing until %s", until.isoformat())
        return until

    async def paused(self) -> SlackPause | None:
        """The pause in force now, or None."""
        return await self.store.slack_paused(self.now())

    async def check_token(self) -> bool:
        """``auth.test``: when the token works, clear a ``revoked`` pause (logged); True when it works.
        A failure changes nothing (the gateway logs it)."""
        answer = await self.slack.auth_test()
        if isinstance(answer, SlackFailure):
            return False
        if await self.store.resume_slack(REVOKED):
            logger.warning("auth.test succeeds again: posting and following sessions resume")
        return True

    def gate(self, name: str, job: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[object]]:
        """``job`` (a periodic job's ``run``, named ``name``) that skips its tick while a pause is
        in force (:meth:`paused`); the pause is read from the database at every tick."""

        async def gated() -> object:
            pause = await self.paused()
            if pause is not None:
                logger.debug("%s skipped: Slack %s since %s", name, pause.reason, pause.since.isoformat())
                return None
            return await job()

        gated.__name__ = f"gated_{name.replace('.', '_')}"
        return gated
