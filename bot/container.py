"""The typed container of what handlers use besides the Slack request: built once by the
composition root (:func:`bot.wiring.create_bot`), never changed by a handler's ``register()``.

Fields: ``settings``; ``agent`` (the Agent API client, reading analytics through the store of landed
days: :func:`bot.services.analytics_store.reading`); ``store`` (the database); ``slack`` (the one
Slack gateway, :class:`bot.slack.SlackGateway`); ``identity`` (Slack user <-> e-mail); ``resolver``
and ``roles_file`` and ``policy`` (the role check's data); the feature services ``sessions``,
``limits``, ``digest`` and ``alerts``; ``hooks``, the receiver of agent hook events (``POST /hooks/agent``);
``accounts``, people's linked platform keys (:class:`bot.services.accounts.Accounts`); ``outbox``, the
posts that wait for Slack (:class:`bot.outbox.Outbox`);
``home``, the App Home tabs' table (opens, marks, publishes, the first-DM hint: :class:`bot.services.home.HomeTabs`);
``computers``, the fleet and its once-only install retries (:class:`bot.services.computers.ComputersService`);
``feedback``, the votes on the agent's answers (:class:`bot.services.feedback.Feedback`);
the clocks ``today()`` (UTC date) and ``now()`` (aware UTC datetime), injectable for tests and the
demo; and ``jobs``, the periodic jobs the scheduler ticks
(:mod:`bot.scheduler`). Code that depends on time reads these clocks, never the wall clock.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.api import AgentClient
from bot.config import Settings
from bot.identity import Identity
from bot.policy import Policy
from bot.roles import RoleResolver, RolesFile
from bot.scheduler import PeriodicJob
from bot.slack import SlackGateway
from bot.store import Store

if TYPE_CHECKING:
    from bot.outbox import Outbox
    from bot.services.accounts import Accounts
    from bot.services.alerts import AlertService
    from bot.services.analytics_store import AnalyticsSync
    from bot.services.channel_defaults import ChannelDefaultsService
    from bot.services.computers import ComputersService
    from bot.services.digest import DigestService
    from bot.services.feedback import Feedback
    from bot.services.home import HomeTabs
    from bot.services.hooks import HookReceiver
    from bot.services.limits import LimitsWorkflow
    from bot.services.sessions import Sessions


def utc_today() -> dt.date:
    """The current UTC date (the default ``today`` clock)."""
    return dt.datetime.now(dt.UTC).date()


def utc_now() -> dt.datetime:
    """The current time, an aware UTC datetime (the default ``now`` clock)."""
    return dt.datetime.now(dt.UTC)


@dataclass
class Services:
    """See the module docstring."""

    settings: Settings
    agent: AgentClient
    store: Store
    slack: SlackGateway
    identity: Identity
    resolver: RoleResolver
    roles_file: RolesFile
    policy: Policy
    sessions: Sessions
    limits: LimitsWorkflow
    digest: DigestService
    alerts: AlertService
    hooks: HookReceiver
    home: HomeTabs
    computers: ComputersService
    accounts: Accounts
    feedback: Feedback
    channel_defaults: ChannelDefaultsService
    """A channel's session defaults and their log (:mod:`bot.services.channel_defaults`, issue #28)."""
    outbox: Outbox | None = None
    """The posts that wait for Slack (:mod:`bot.outbox`), drained by its periodic job; None in a bot
    built without one (tests that construct :class:`Services` by hand)."""
    analytics_sync: AnalyticsSync | None = None
    """Fills the store of landed analytics days (:mod:`bot.services.analytics_store`; job
    ``analytics.sync``, ``agent-bot analytics sync``); ``agent`` reads through that store. None in a
    bot built without one."""
    today: Callable[[], dt.date] = utc_today
    now: Callable[[], dt.datetime] = utc_now
    jobs: list[PeriodicJob] = field(default_factory=list)
