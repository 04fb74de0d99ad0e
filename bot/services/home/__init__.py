"""The App Home tab's data: what one person sees there, gathered section by section.

:meth:`HomeService.gather` reads every section the person's role shows, concurrently, each bounded
by :data:`SECTION_TIMEOUT` seconds, and returns a :class:`Home` for :func:`formatters.home.home_view`.
Which sections a person gets is asked of the :class:`bot.policy.Policy` (the policy keys below), never
decided by comparing roles here:

- everyone who may list sessions (:data:`SESSIONS_KEY`): their own agent sessions started from
  Slack, running first (the ``agent_sessions`` rows of :mod:`bot.services.sessions.store`);
- everyone who may ask for a credit limit (:data:`REQUESTS_KEY`): their credit-limit requests and
  their state (``limit_requests``, :mod:`bot.services.limits.store`);
- approvers (:data:`APPROVE_KEY`): the pending requests they may approve now, not their own, not
  expired, and within the owner threshold for them (:meth:`bot.policy.Policy.allows` with the
  request's size): the same checks the workflow makes again at click time;
- managers (:data:`DASHBOARD_KEY`): the last 7 days against the 7 before
  (:func:`bot.services.usage.fetch_usage`, the comparison rule of :meth:`bot.services.periods.Period.previous`),
  the three worst readiness pass rates (:func:`bot.services.readiness.overview`), computers in
  ``error`` (``GET /api/v0/computers``), and the last enterprise-controls change
  (:func:`bot.services.controls.fetch_history`; that one also needs :data:`CONTROLS_KEY`).

- everyone who may list alert subscriptions (:data:`ALERTS_KEY`): the alert subscriptions whose
  channel is their DM with the bot or that they created (:meth:`bot.services.alerts.AlertsRepository.subscriptions`);
- managers also get the top users named as Slack people (``people``: e-mail -> Slack user ID, through
  :meth:`bot.identity.Identity.people_of`) and a small chart of the two weeks
  (:class:`HomeCharts`: drawn and uploaded at most once a day, shared by every manager's Home).
- the figures and the chart read the store of landed days first (issue #30): while the platform does
  not answer, the stored days stand in and a line under the figures and the chart names the days not
  had (``Home.usage_not_had``), with no change shown; a chart drawn then has no bar for them and is
  drawn again :data:`CHART_REDRAW` later (shown only while the figures also say which days are missing).

A section that fails (an Agent API error, a database error, a timeout) becomes a :class:`Fault` that
says what happened and what to do; the other sections are kept. A section the role does not show is
``None``. The gathering talks to Slack only to name the top users and to upload the chart.

Keeping Homes fresh (``home_tabs``, one row per person, :class:`HomeTabs`):

- opening the Home tab records the person (``opened_at``, their role, their DM channel) and what was
  published (the ``hash`` of Slack's answer, ``published_at``);
- a change a Home shows marks the Homes it shows up on dirty (:class:`HomeMarks`, called by the
  sessions follower and the credit-limit workflow): ``dirty_since`` is set and ``dirty_version``
  counts the marks. Only people who opened their Home once are marked;
- :meth:`HomeRefresher.tick` (a periodic job on every replica, :data:`REFRESH_JOB`) republishes dirty
  Homes: each refreshed at most once every ``interval`` seconds (``AGENT_BOT_HOME_REFRESH_SECONDS``:
  after a refresh, ``claim_until`` says when the next may come; an open is not a refresh, so a
  change just after one is shown at the next tick), except that a credit-limit request filed or
  decided lifts that wait (:meth:`HomeMarks.request_changed`); at most :data:`REFRESH_BATCH` a tick
  and :data:`PUBLISHES_PER_MINUTE` a minute across every replica (``views.publish`` is Tier 4, "100+ per minute", Slack doc
  https://docs.slack.dev/reference/methods/views.publish). A replica claims a Home with a conditional
  UPDATE (``claimed_by``, ``claim_until``: a lease a dead replica's claim loses), publishes it with the
  hash it recorded (so a newer view is never overwritten: Slack answers ``hash_conflict``), and clears
  the mark only when no newer mark came meanwhile (``dirty_version``). So one mark is one publish,
  whatever the replicas.

The first-DM hint is claimed in the same table (``hinted_at``, a conditional UPDATE): it goes out once
per person (:meth:`HomeTabs.claim_hint`).
"""

from bot.services.home.build import (
    ALERTS_KEY,
    APPROVE_KEY,
    CHART_ALT,
    CHART_INCOMPLETE,
    CHART_LEASE,
    CHART_NOT_HAD,
    CHART_REDRAW,
    CHART_REFUSED,
    CHART_RETRY,
    CHART_TITLE,
    CONTROLS_KEY,
    DASHBOARD_KEY,
    REQUESTS_KEY,
    SECTION_TIMEOUT,
    SESSIONS_KEY,
    ChartImage,
    Fault,
    Home,
    HomeCharts,
    HomeService,
    HomeSession,
    People,
    render_week_chart,
    session_rank,
)
from bot.services.home.service import (
    HASH_CONFLICT,
    PUBLISH_WINDOW,
    PUBLISHES_PER_MINUTE,
    REFRESH_BATCH,
    REFRESH_INTERVAL,
    REFRESH_JOB,
    REFRESH_RETRY,
    REFRESH_TICK_SECONDS,
    Gather,
    HomeMarks,
    HomeRefresher,
    RefreshReport,
    Render,
    publish_home,
)
from bot.services.home.store import CHART_CLAIMS, REFRESH_CLAIMS, REFRESH_LEASE, HomeTab, HomeTabs, home_charts, home_tabs

__all__ = [
    "ALERTS_KEY",
    "APPROVE_KEY",
    "CHART_ALT",
    "CHART_CLAIMS",
    "CHART_INCOMPLETE",
    "CHART_LEASE",
    "CHART_NOT_HAD",
    "CHART_REDRAW",
    "CHART_REFUSED",
    "CHART_RETRY",
    "CHART_TITLE",
    "CONTROLS_KEY",
    "DASHBOARD_KEY",
    "HASH_CONFLICT",
    "PUBLISHES_PER_MINUTE",
    "PUBLISH_WINDOW",
    "REFRESH_BATCH",
    "REFRESH_CLAIMS",
    "REFRESH_INTERVAL",
    "REFRESH_JOB",
    "REFRESH_LEASE",
    "REFRESH_RETRY",
    "REFRESH_TICK_SECONDS",
    "REQUESTS_KEY",
    "SECTION_TIMEOUT",
    "SESSIONS_KEY",
    "ChartImage",
    "Fault",
    "Gather",
    "Home",
    "HomeCharts",
    "HomeMarks",
    "HomeRefresher",
    "HomeService",
    "HomeSession",
    "HomeTab",
    "HomeTabs",
    "People",
    "RefreshReport",
    "Render",
    "home_charts",
    "home_tabs",
    "publish_home",
    "render_week_chart",
    "session_rank",
]
