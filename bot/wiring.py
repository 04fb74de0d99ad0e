"""The composition root: every client, service, periodic job and listener of the bot, built here once.

:func:`create_bot` is the one place where :mod:`bot` meets :mod:`handlers` and :mod:`formatters`
(``tests/test_layers.py`` holds every other module under ``bot/`` to that). It runs small named steps,
each typed and each readable on its own::

    check_settings   the settings needed are there (ConfigurationError naming the variables otherwise)
    build_clients    the Agent API client, the Slack Web API client and gateway, the identity cache
    open_store       the database (SQLAlchemy URL of AGENT_BOT_DATABASE_URL, migrated as settings say)
    build_services   the role check's data and the feature services, in one :class:`bot.container.Services`
    build_jobs       the periodic jobs the scheduler ticks, gated by the Slack lifecycle
    watch_analytics_store  ``GET /metrics``'s analytics store gauges read the database at each scrape
    build_app        the Bolt app (counting every request), its global middleware and error handler
    handlers.register  the ``/agent`` router and every listener

Nothing happens at import time. The factories of services that need this project's formatters
(:func:`digest_service`, :func:`alert_service`, :func:`home_refresher`) live here too, for the
separate-process ticks (``agent-bot digest tick``, the demo), the tests and the benchmarks.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.web.async_client import AsyncWebClient

import handlers
from bot import metrics
from bot.api import AgentClient
from bot.app import Bot
from bot.config import ConfigurationError, Settings
from bot.container import Services, utc_now, utc_today
from bot.errors import apologize, use_apology
from bot.identity import Identity
from bot.installations import (
    BOT_SCOPES,
    CurrentToken,
    EncryptedInstallationStore,
    Installations,
    InstalledAuthorize,
    InstalledTokens,
    InstalledWorkspaces,
    InstallPage,
    StateStore,
    TeamsSeen,
    authorization_url,
    oauth_client,
    team_access_listener,
)
from bot.metrics import MeteredApp, Metrics, StoreFigures
from bot.middleware import (
    FinishDelivery,
    Installation,
    KeepDelivery,
    Workspaces,
    build_dedupe,
    build_role_check,
    build_workspace_check,
    tag_request,
)
from bot.outbox import DRAIN_SECONDS, Outbox
from bot.policy import Policy
from bot.roles import RoleResolver, RolesFile
from bot.scheduler import PeriodicJob, Scheduler
from bot.services.accounts import Accounts, PlatformEndpoint, key_ring
from bot.services.alerts import AlertKind, AlertService, ComputersKind, ControlsKind
from bot.services.alerts.readiness import ReadinessKind
from bot.services.alerts.usage import UsageKind
from bot.services.analytics_store import SYNC_JOB, AnalyticsStore, AnalyticsSync, reading
from bot.services.channel_defaults import ChannelDefaultsService
from bot.services.computer_rules import ComputerRules
from bot.services.computers import ComputersService
from bot.services.digest import DigestService, People, day_landed
from bot.services.feedback import Feedback, FeedbackStore
from bot.services.home import REFRESH_JOB, REFRESH_TICK_SECONDS, Home, HomeMarks, HomeRefresher, HomeTab, HomeTabs
from bot.services.hook_tokens import HookTokens
from bot.services.hooks import HookReceiver
from bot.services.lifecycle import AUTH_CHECK_JOB, AUTH_CHECK_SECONDS, REVOKED, SlackLifecycle
from bot.services.limits import EXPIRY_CHECK_SECONDS, EXPIRY_JOB, ApprovalsConfig, LimitsStore, LimitsWorkflow
from bot.services.sessions import Sessions
from bot.services.sessions.starter import INTERRUPTED_CHECK_SECONDS
from bot.services.sessions.stream import StreamDisplay
from bot.slack import SlackGateway, web_client
from bot.store import Store
from formatters import limits as limits_messages
from formatters import notices
from formatters import sessions as session_messages
from formatters import streams as stream_messages
from formatters.alerts import controls_alert, overflow_message
from formatters.alerts_computers import computer_alert, computer_news
from formatters.alerts_readiness import alert_ask as readiness_ask
from formatters.alerts_readiness import readiness_alert
from formatters.alerts_usage import usage_alert
from formatters.digest import chart_alt_text, digest_message
from formatters.home import home_view
from handlers.alerts import AlertAutorun
from handlers.home import home_charts, home_service
from handlers.router import Router

__all__ = [
    "DELIVERY_KEEP",
    "DIGEST_JOB",
    "FOLLOW_SECONDS",
    "Clients",
    "alert_intervals",
    "alert_job",
    "alert_kinds",
    "alert_service",
    "build_app",
    "build_clients",
    "build_jobs",
    "build_services",
    "check_settings",
    "create_bot",
    "digest_service",
    "home_refresher",
    "open_store",
    "watch_analytics_store",
]

logger = logging.getLogger(__name__)

FOLLOW_SECONDS = 1.0
"""How often the session follower looks for sessions due to be polled."""
DELIVERY_KEEP = dt.timedelta(days=1)
"""How long a Slack delivery's de-duplication record is kept: Slack retries within minutes."""
OUTBOX_JOB = "slack.outbox"
"""The periodic job that drains :mod:`bot.outbox` (posts waiting for Slack)."""
TOKEN_REFRESH_JOB = "slack.token_refresh"
"""OAuth mode with rotating tokens: the periodic refresh of tokens about to expire (:mod:`bot.installations`)."""
TOKEN_REFRESH_SECONDS = 60.0
DIGEST_JOB = "digest"
"""The periodic job of the daily digest (:meth:`bot.services.digest.DigestService.tick`)."""


@dataclass(frozen=True)
class Clients:
    """What talks to the outside world: ``agent`` (the Agent API), ``web`` (Slack's Web API client, which
    Bolt uses too), ``slack`` (the one gateway over it), ``identity`` (Slack user <-> e-mail, cached),
    the ``bot_token`` (``SLACK_BOT_TOKEN``, kept secret; in OAuth mode the token given last) and
    ``installations`` (OAuth mode only: :class:`bot.installations.Installations`, the token source's)."""

    agent: AgentClient
    web: AsyncWebClient
    slack: SlackGateway
    identity: Identity
    bot_token: SecretStr
    installations: Installations | None = None


def create_bot(
    settings: Settings,
    *,
    agent: AgentClient | None = None,
    store: Store | None = None,
    today: Callable[[], dt.date] = utc_today,
    now: Callable[[], dt.datetime] = utc_now,
    socket_mode: bool = False,
) -> Bot:
    """Build the bot from ``settings``; ``agent``/``store`` may be given (tests, demo); ``today`` and
    ``now`` are the clocks every feature reads; ``socket_mode`` needs no signing secret and verifies no
    request signature. Raises :class:`ConfigurationError` naming the environment variables that are
    missing, :class:`bot.roles.RolesConfigError` for a bad roles file, and
    :class:`bot.store.DatabaseUnusable` for a database it cannot use (among them
    :class:`bot.migrations.SchemaBehind`: behind the code and ``settings.auto_upgrade`` off)."""
    check_settings(settings, agent_given=agent is not None, socket_mode=socket_mode)
    roles_file = RolesFile.load(settings.config_file)
    store = store or open_store(settings, now)
    clients = build_clients(settings, agent=agent, store=store, now=now)
    services = build_services(settings, clients, store, roles_file, today=today, now=now)
    services.jobs.extend(build_jobs(settings, services))
    watch_analytics_store(metrics.current(), store, today)
    router = Router()
    app, installation = build_app(settings, clients.web, services, router, socket_mode=socket_mode, installations=clients.installations)
    handlers.register(app, router, services)
    return Bot(app, services, router, Scheduler(services.jobs), installation=installation)


def check_settings(settings: Settings, *, agent_given: bool, socket_mode: bool) -> None:
    """Raise :class:`ConfigurationError` naming every environment variable that is missing: the bot
    token (in OAuth mode instead: the client secret, the state secret and the encryption key that
    keeps the installations' tokens), the signing secret in HTTP mode, the Agent API's URL and key
    unless ``agent_given``."""
    slack = ["slack_client_secret", "slack_state_secret", "encryption_key"] if settings.oauth else ["slack_bot_token"]
    needed = slack + ([] if socket_mode else ["slack_signing_secret"])
    missing = settings.missing(*needed)
    if not agent_given:
        missing += settings.missing("agent_api_url", "agent_api_key")
    if missing:
        raise ConfigurationError(f"missing settings: {', '.join(missing)} (see README, Configuration)")


def build_clients(
    settings: Settings, *, agent: AgentClient | None = None, store: Store | None = None, now: Callable[[], dt.datetime] = utc_now
) -> Clients:
    """The Agent API client (``agent`` when given), Slack's Web API client on ``SLACK_API_URL`` and the
    gateway over it, and the identity cache (``AGENT_BOT_USER_CACHE_TTL`` seconds). Call after
    :func:`check_settings` (a missing setting raises :class:`ConfigurationError` here). In OAuth mode
    (``SLACK_CLIENT_ID``) the gateway's tokens come from the installations in ``store`` (required)."""
    if settings.oauth:
        return _oauth_clients(settings, agent=agent or _agent_client(settings), store=store, now=now)
    bot_token = SecretStr(settings.required("slack_bot_token"))
    agent = agent or _agent_client(settings)
    web = web_client(bot_token.get_secret_value(), settings.slack_api_url)
    slack = SlackGateway(web)
    return Clients(agent=agent, web=web, slack=slack, identity=Identity(slack, ttl=settings.user_cache_ttl), bot_token=bot_token)


def _agent_client(settings: Settings) -> AgentClient:
    return AgentClient(
        base_url=settings.required("agent_api_url"),
        app_url=settings.agent_app_url,
        api_key=settings.required("agent_api_key"),
        analytics_cache_ttl=settings.analytics_cache_ttl,
    )


def _oauth_clients(settings: Settings, *, agent: AgentClient, store: Store | None, now: Callable[[], dt.datetime]) -> Clients:
    """OAuth mode's clients: the Web API client holds no token; the gateway asks
    :class:`bot.installations.InstalledTokens` for each call's."""
    if store is None:
        raise ConfigurationError("OAuth mode (SLACK_CLIENT_ID) keeps its installations in the database: open the store first")
    web = web_client(None, settings.slack_api_url)
    installations = build_installations(settings, store, oauth_client(settings.slack_api_url), now)
    tokens = InstalledTokens(installations, TeamsSeen(engine=store.engine, run=store.run, now=now))
    slack = SlackGateway(web, tokens)
    identity = Identity(slack, ttl=settings.user_cache_ttl)
    return Clients(agent=agent, web=web, slack=slack, identity=identity, bot_token=CurrentToken(tokens), installations=installations)


def build_installations(settings: Settings, store: Store, web: AsyncWebClient, now: Callable[[], dt.datetime]) -> Installations:
    """The installations of OAuth mode (:mod:`bot.installations`), in ``store``'s database, their tokens
    encrypted with ``AGENT_BOT_ENCRYPTION_KEY`` (raises :class:`ConfigurationError` without it);
    ``web`` calls ``oauth.v2.access`` for the refreshes (:func:`bot.installations.oauth_client`)."""
    ring = key_ring(settings.encryption_key)
    if ring is None:
        raise ConfigurationError("missing settings: AGENT_BOT_ENCRYPTION_KEY (OAuth mode keeps the installations' tokens encrypted)")
    client_id = settings.required("slack_client_id")
    return Installations(
        store=EncryptedInstallationStore(client_id=client_id, engine=store.engine, ring=ring, run=store.run),
        engine=store.engine,
        run=store.run,
        client=web,
        client_id=client_id,
        client_secret=SecretStr(settings.required("slack_client_secret")),
        rotation_minutes=settings.slack_token_rotation_minutes,
        now=now,
    )


def install_flow(settings: Settings, web: AsyncWebClient, installations: Installations, store: Store) -> InstallPage:
    """Bolt's OAuth flow of OAuth mode (``GET /slack/install``, ``GET /slack/oauth_redirect``): the
    manifest's bot scopes, the installation and state stores in the bot's database, Slack's authorize
    page next to ``SLACK_API_URL``; a new install lifts a ``revoked`` pause."""
    oauth_settings = AsyncOAuthSettings(
        client_id=settings.required("slack_client_id"),
        client_secret=settings.required("slack_client_secret"),
        scopes=list(BOT_SCOPES),
        redirect_uri=settings.slack_redirect_uri,
        installation_store=installations.store,
        installation_store_bot_only=True,
        token_rotation_expiration_minutes=settings.slack_token_rotation_minutes,
        state_store=StateStore(engine=store.engine, run=store.run, secret=SecretStr(settings.required("slack_state_secret"))),
        authorization_url=authorization_url(settings.slack_api_url),
    )

    async def installed() -> None:
        if await store.resume_slack(REVOKED):
            logger.warning("installed again: posting and following sessions resume")

    client = oauth_client(settings.slack_api_url)  # the code exchange and auth.test of a new install: nothing logged at DEBUG
    return InstallPage(client=client, settings=oauth_settings, installed=installed, now=installations.now)


def open_store(settings: Settings, now: Callable[[], dt.datetime]) -> Store:
    """The database of ``AGENT_BOT_DATABASE_URL``, upgraded at start when ``AGENT_BOT_DB_AUTO_UPGRADE``;
    raises :class:`bot.store.DatabaseUnusable` for one it cannot use."""
    return Store(settings.database_url, now=now, auto_upgrade=settings.auto_upgrade)


def build_services(
    settings: Settings,
    clients: Clients,
    store: Store,
    roles_file: RolesFile,
    *,
    today: Callable[[], dt.date],
    now: Callable[[], dt.datetime],
) -> Services:
    """The role check's data (resolver, policy from the roles file) and the feature services: sessions,
    credit limits, digest, alerts, agent hooks, the App Home tabs, the computers; ``jobs`` is empty (:func:`build_jobs`)."""
    agent, slack, identity = clients.agent, clients.slack, clients.identity
    analytics = reading(agent, store)  # usage, digest, alerts, Home: stored days first (issue #30)

    async def organization_emails() -> set[str]:
        return {user.email.lower() async for user in agent.iter_organization_users() if user.email}

    resolver = RoleResolver(
        roles_file, identity=identity, slack=slack, organization_emails=organization_emails, ttl=settings.user_cache_ttl
    )
    approvals = ApprovalsConfig.from_extra(roles_file.model_extra)
    policy = Policy.from_roles_file(roles_file, approver_role=approvals.approver_role, owner_required_above=approvals.owner_required_above)
    home_tabs = HomeTabs(store)
    marks = HomeMarks(home_tabs, policy, now)  # what changes a Home marks it for the refresh job
    accounts = build_accounts(settings, store, now)
    sessions = Sessions(
        agent=agent,
        store=store,
        slack=slack,
        now=now,
        follow_hours=settings.session_follow_hours,
        bot_token=clients.bot_token,
        policy=policy,
        messages=session_messages,
        rules=ComputerRules.from_roles(roles_file, resolver),  # who may start sessions on which computers
        people=resolver.resolve,
        on_change=marks.session_changed,
        accounts=accounts,  # people's own keys: what a person does to the agent goes with theirs
        sessions_as=settings.sessions_as,
    )
    outbox = slack_outbox(settings, clients, store, now, owner=sessions.follower.owner)
    sessions.starter.use_outbox(outbox)  # session parents and agent answers wait for Slack (issue #26)
    channel_defaults = ChannelDefaultsService(
        store=store, agent=agent, rules=sessions.starter.rules, now=now, one_line=session_messages.one_line
    )
    sessions.starter.use_reply_rules(channel_defaults.replies)  # the parent message says when only mentions reach the agent
    sessions.follower.use_outbox(outbox)
    # each agent turn as one streamed message where Slack allows it (issue #27); else the messages display
    sessions.follower.use_stream(
        StreamDisplay(store=store, slack=slack, messages=stream_messages, now=now, display=settings.session_display)
    )
    limits = LimitsWorkflow(
        agent=agent,
        store=LimitsStore(store),
        slack=slack,
        now=now,
        config=approvals,
        policy=policy,
        messages=limits_messages,
        on_change=marks.request_changed,
    )
    limits.use_outbox(outbox)  # a decision's outcome waits for Slack too
    hook_receiver = HookReceiver(
        store=store,
        sessions=sessions,
        slack=slack,
        identity=identity,
        secret=settings.hook_secret.get_secret_value() if settings.hook_secret else None,
        now=now,
        tokens=HookTokens(store, now=now),
        messages=session_messages,
    )
    services = Services(
        settings=settings,
        agent=analytics,
        store=store,
        slack=slack,
        identity=identity,
        resolver=resolver,
        roles_file=roles_file,
        policy=policy,
        sessions=sessions,
        limits=limits,
        digest=digest_service(agent=analytics, store=store, slack=slack, now=now, identity=identity),
        alerts=alert_service(agent=analytics, store=store, slack=slack, now=now, identity=identity),
        hooks=hook_receiver,
        home=home_tabs,
        computers=ComputersService(agent=analytics, store=store),
        accounts=accounts,
        feedback=Feedback(store=store, session_row=sessions.store.by_session_id, agent=agent, now=now),
        channel_defaults=channel_defaults,
        outbox=outbox,
        analytics_sync=analytics_sync(settings, agent, store, now, today),
        today=today,
        now=now,
        jobs=[],
    )
    services.alerts.autorun = AlertAutorun(services)  # a session for each new incident (issue #28 part 4)
    services.alerts.autorun_cap = settings.autorun_daily_cap
    return services


def analytics_sync(
    settings: Settings, agent: AgentClient, store: Store, now: Callable[[], dt.datetime], today: Callable[[], dt.date]
) -> AnalyticsSync:
    """The sync of the store of landed analytics days (:mod:`bot.services.analytics_store.sync`): the
    last ``AGENT_BOT_ANALYTICS_BACKFILL_DAYS`` days, a request every ``AGENT_BOT_ANALYTICS_SYNC_INTERVAL``
    seconds at most, landed by the digest's rule; also ``agent-bot analytics sync``."""
    return AnalyticsSync(
        agent=agent,
        store=AnalyticsStore(store),
        now=now,
        today=today,
        landed=lambda day: day_landed(agent, day),
        backfill_days=settings.analytics_backfill_days,
        request_interval=settings.analytics_sync_interval,
    )


def watch_analytics_store(watching: Metrics, store: Store, today: Callable[[], dt.date]) -> None:
    """Make ``watching``'s analytics store gauges read ``store``'s database at each scrape
    (:class:`bot.metrics.AnalyticsStoreGauges`; :meth:`AnalyticsStore.status`, one cheap query of
    aggregates): days stored, the oldest day, the last sync, and the lag, yesterday by ``today`` (the
    bot's clock) minus the newest stored day. No Agent API call at scrape time, so whether yesterday
    has landed is not asked: the lag is 1 from midnight UTC until a pass stores yesterday, like
    ``agent-bot doctor``'s."""
    analytics = AnalyticsStore(store)

    async def read() -> StoreFigures:
        status = await analytics.status()
        lag = (today() - dt.timedelta(days=1) - status.newest).days if status.newest is not None else None
        return StoreFigures(status.days, status.oldest, status.last_sync, lag)

    watching.analytics.watch(read)


def slack_outbox(settings: Settings, clients: Clients, store: Store, now: Callable[[], dt.datetime], *, owner: str) -> Outbox:
    """The durable outbox of posts that wait for Slack (:mod:`bot.outbox`), drained through a client
    that does not wait out a 429 in-line (the queue honours ``Retry-After`` itself); posts wait at
    most ``AGENT_BOT_SLACK_OUTBOX_DEADLINE_SECONDS``. ``owner`` names this process in its leases."""
    drain_token = None if clients.installations is not None else clients.bot_token.get_secret_value()
    drain = SlackGateway(web_client(drain_token, settings.slack_api_url, rate_limit_retries=0), clients.slack.tokens)
    deadline = dt.timedelta(seconds=settings.slack_outbox_deadline_seconds)
    return Outbox(store=store, slack=clients.slack, drain_slack=drain, now=now, deadline=deadline, owner=owner)


def build_accounts(settings: Settings, store: Store, now: Callable[[], dt.datetime]) -> Accounts:
    """People's own platform keys (issue #25): encrypted with ``AGENT_BOT_ENCRYPTION_KEY``, checked
    against ``AGENT_API_URL``. Raises :class:`bot.services.accounts.EncryptionKeyError` (a
    :class:`ConfigurationError`) for a malformed encryption key, naming it by position only."""
    return Accounts(
        store,
        ring=key_ring(settings.encryption_key),
        endpoint=PlatformEndpoint(settings.agent_api_url, settings.agent_app_url) if settings.agent_api_url else None,
        now=now,
    )


def build_jobs(settings: Settings, services: Services) -> list[PeriodicJob]:
    """The periodic jobs, in the order the scheduler starts them: the sessions follower, the
    interrupted starts and the Slack outbox's drain, credit-limit expiry, the digest, one per alert kind (:func:`alert_intervals`),
    the pruning of de-duplication records, the analytics store's sync (``analytics.sync``), the Slack
    token check, the Home refresh. Every job that
    posts skips its ticks while Slack said stop (:class:`bot.services.lifecycle.SlackLifecycle`)."""
    store, now = services.store, services.now
    lifecycle = SlackLifecycle(store=store, slack=services.slack, now=now)

    def gated(name: str, seconds: float, run: Callable[[], Awaitable[object]]) -> PeriodicJob:
        return PeriodicJob(name, seconds, lifecycle.gate(name, run))

    async def prune_deliveries() -> None:
        removed = await store.prune(now() - DELIVERY_KEEP)
        logger.info("pruned %s delivery records older than %s", removed, DELIVERY_KEEP)
        if services.outbox is not None:  # and the outbox's finished posts
            await services.outbox.prune(now() - DELIVERY_KEEP)

    sessions, alerts, tokens = services.sessions, services.alerts, services.slack.tokens
    return [
        gated("sessions.follow", FOLLOW_SECONDS, sessions.follower.tick),
        gated("sessions.interrupted_starts", INTERRUPTED_CHECK_SECONDS, sessions.starter.close_interrupted),
        *([gated(OUTBOX_JOB, DRAIN_SECONDS, services.outbox.tick)] if services.outbox is not None else []),
        gated(EXPIRY_JOB, EXPIRY_CHECK_SECONDS, services.limits.tick),
        gated(DIGEST_JOB, settings.digest_check_seconds, services.digest.tick),
        *(
            gated(alert_job(kind), seconds, alerts.tick_of(kind))
            for kind, seconds in alert_intervals(settings).items()
            if kind in alerts.kinds
        ),
        PeriodicJob("deliveries.prune", 3600.0, prune_deliveries),
        # posts nothing, so not gated; its first tick (at start-up) is the backfill
        *(
            [PeriodicJob(SYNC_JOB, settings.analytics_sync_seconds, services.analytics_sync.tick)]
            if services.analytics_sync and settings.analytics_backfill_days
            else []
        ),
        PeriodicJob(AUTH_CHECK_JOB, AUTH_CHECK_SECONDS, lifecycle.check_token),  # at start-up: a working token resumes them
        gated(REFRESH_JOB, REFRESH_TICK_SECONDS, home_refresher(services).tick),
        *(
            [PeriodicJob(TOKEN_REFRESH_JOB, TOKEN_REFRESH_SECONDS, tokens.installations.refresh_due)]
            if isinstance(tokens, InstalledTokens)
            else []
        ),
    ]


def build_app(
    settings: Settings,
    web: AsyncWebClient,
    services: Services,
    router: Router,
    *,
    socket_mode: bool,
    installations: Installations | None = None,
) -> tuple[MeteredApp, Installation | None]:
    """The Bolt app on Slack's ``web`` client (verifying request signatures unless ``socket_mode``) with
    its global middleware in order: the request's log tag, the installation's workspace, de-duplication
    of Slack's retries, the role check (policy keys from ``router`` and the sessions' events); the
    completion handler that finishes a de-duplicated delivery; the global error handler. Returns the
    app and the :class:`bot.middleware.Installation` it checks (learnt at start-up). With
    ``installations`` (OAuth mode): Bolt's OAuth flow (:func:`install_flow`) and an authorize that
    reads the installations (:class:`bot.installations.InstalledAuthorize`); the workspace check
    accepts the teams the bot holds an installation of, and no :class:`Installation` is returned."""
    oauth: dict[str, Any] = {}
    if installations is not None:
        oauth = {"oauth_flow": install_flow(settings, web, installations, services.store), "authorize": InstalledAuthorize(installations)}
    with _bolt_token_warning_silenced():
        app = MeteredApp(  # an AsyncApp that counts and times every request (bot.metrics)
            client=web,
            signing_secret=settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else None,
            request_verification_enabled=not socket_mode,
            name="agent-chatops",
            **oauth,
        )
    installation = Installation(services.slack) if installations is None else None
    seen = services.slack.tokens.seen if isinstance(services.slack.tokens, InstalledTokens) else None
    workspaces: Workspaces = installation if installation is not None else InstalledWorkspaces(installations, seen)  # type: ignore[arg-type]
    app.middleware(tag_request)
    app.middleware(build_workspace_check(workspaces, messages=notices))
    if installations is not None:  # Enterprise Grid: an org-wide install added to or removed from workspaces
        app.event("team_access_granted")(team_access_listener(installations, granted=True))
        app.event("team_access_revoked")(team_access_listener(installations, granted=False))
    app.middleware(build_dedupe(services.store, messages=notices))
    # Bolt calls its listener runner's completion handler when a listener has finished (after its ack
    # and its work); AsyncApp takes no custom one as an argument, so the default (a no-op) is replaced
    app.listener_runner.listener_start_handler = KeepDelivery(services.store)  # renews the claim while the work runs
    app.listener_runner.listener_completion_handler = FinishDelivery(services.store)
    app.middleware(
        build_role_check(
            services.resolver,
            services.policy,
            services.slack,
            router.policy_key,
            services.channel_defaults.event_policy(services.sessions.event_policy),  # replies=mentions: chatter is no reply
            messages=notices,
            action_needs=services.limits.role_needed,
        )
    )
    use_apology(notices.internal_error_message)  # how reported listeners and _on_unhandled word an apology
    app.error(_on_unhandled)
    return app, installation


@contextlib.contextmanager
def _bolt_token_warning_silenced() -> Iterator[None]:
    """Bolt reads ``SLACK_BOT_TOKEN`` from the environment on its own and, given our client (which
    already holds that token), warns at every start that the token "will be unused": true and
    harmless, and read by operators as a fault. That one message is dropped while the app is built."""
    expected = warning_client_prioritized_and_token_skipped()
    bolt = logging.getLogger("slack_bolt.AsyncApp")

    def not_that_one(record: logging.LogRecord) -> bool:
        return record.getMessage() != expected

    bolt.addFilter(not_that_one)
    try:
        yield
    finally:
        bolt.removeFilter(not_that_one)


async def _on_unhandled(error: BaseException, respond: AsyncRespond | None = None) -> None:
    """The app's global error handler (Bolt passes ``error`` and, when the request has one, ``respond``)."""
    await apologize(error, respond)


def alert_intervals(settings: Settings) -> dict[str, float]:
    """Seconds between detection passes of each alert kind (``AGENT_BOT_ALERT_*_SECONDS``; ``usage``
    checks with the digest's cadence, since it alerts once a day has landed)."""
    return {
        "controls": settings.alert_controls_seconds,
        "readiness": settings.alert_readiness_seconds,
        "computers": settings.alert_computers_seconds,
        "usage": settings.digest_check_seconds,
    }


def alert_job(kind: str) -> str:
    """The periodic job of an alert kind: ``alerts.<kind>``."""
    return f"alerts.{kind}"


def digest_service(
    *, agent: AgentClient, store: Store, slack: SlackGateway, now: Callable[[], dt.datetime], identity: Identity | None = None
) -> DigestService:
    """A :class:`bot.services.digest.DigestService` with this project's formatters, posting through
    ``slack`` (also used by ``agent-bot digest tick``, the demo, tests and benchmarks); top users are
    named through ``identity`` (a new :class:`bot.identity.Identity` on ``slack`` when None)."""
    people = (identity or Identity(slack)).people_of
    agent = reading(agent, store)  # stored days first
    answers = FeedbackStore(store).rated_on  # the line of yesterday's rated agent answers
    return DigestService(
        agent=agent, store=store, slack=slack, now=now, formatter=digest_message, alt_text=chart_alt_text, people=people, answers=answers
    )


def alert_kinds(*, agent: AgentClient, store: Store, now: Callable[[], dt.datetime], people: People | None = None) -> list[AlertKind]:
    """The kinds that work, with this project's formatters (:data:`bot.services.alerts.ALL_KINDS` order);
    ``people`` names the users of usage alerts (:meth:`bot.identity.Identity.people_of`; None: e-mails)."""
    return [
        ControlsKind(agent, controls_alert, now),
        ReadinessKind(agent, readiness_alert, ask=readiness_ask),
        ComputersKind(agent, computer_alert, computer_news, now),
        UsageKind(agent, usage_alert, now, people),
    ]


def alert_service(
    *, agent: AgentClient, store: Store, slack: SlackGateway, now: Callable[[], dt.datetime], identity: Identity | None = None
) -> AlertService:
    """A :class:`bot.services.alerts.AlertService` with this project's kinds and formatters, posting
    through ``slack`` (the app's jobs, ``agent-bot alerts tick``, the demo and tests); users are
    named through ``identity`` (a new :class:`bot.identity.Identity` on ``slack`` when None)."""
    people = (identity or Identity(slack)).people_of
    agent = reading(agent, store)  # usage alerts read stored days first
    kinds = alert_kinds(agent=agent, store=store, now=now, people=people)
    return AlertService(store=store, slack=slack, now=now, kinds=kinds, overflow_formatter=overflow_message)


def home_refresher(services: Services) -> HomeRefresher:
    """The Home refresh job's worker (:meth:`bot.services.home.HomeRefresher.tick`): each dirty Home is
    gathered for its person's role now (:meth:`bot.roles.RoleResolver.resolve`, cached), formatted with
    :func:`formatters.home.home_view` and published at most every ``AGENT_BOT_HOME_REFRESH_SECONDS``."""
    charts = home_charts(services)

    async def gather(tab: HomeTab) -> Home:
        user = await services.resolver.resolve(tab.user_id)
        return await home_service(services, charts=charts).gather(user, dm_channel=tab.dm_channel)

    return HomeRefresher(
        tabs=services.home,
        slack=services.slack,
        gather=gather,
        render=home_view,
        now=services.now,
        interval=services.settings.home_refresh_seconds,
        charts=charts,
    )
