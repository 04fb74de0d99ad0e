"""The App Home: the Home tab published for whoever opens it, kept fresh; the Messages tab's hint.

``app_home_opened`` (Slack doc https://docs.slack.dev/reference/events/app_home_opened) with
``tab: home``: ack, record the open (:meth:`bot.services.home.HomeTabs.opened`: role, DM channel),
gather the person's Home (:class:`bot.services.home.HomeService`, sections read concurrently, each
bounded, a failing one shown as its error), format it (:func:`formatters.home.home_view`) and publish
it (:func:`bot.services.home.publish_home`, ``views.publish``) with the ``hash`` of the view the
event carries. When Slack answers ``hash_conflict`` (another publish, a refresh gathered before the
open perhaps, replaced that view meanwhile) it is published again without the hash: it was gathered
after the person opened the tab, so it is what is true now, and opening the Home must show that;
what Slack answered is recorded (:meth:`bot.services.home.HomeTabs.published`).
With ``tab: messages`` the person gets the first-DM hint of what to type, once
(:func:`handlers.sessions.hint_once`), and, once a day, prompts made from their own recent sessions
(:class:`bot.services.sessions.suggestions.SuggestedPrompts`); nothing is published.

Between opens, :func:`bot.wiring.home_refresher` builds the periodic job that republishes the Homes a change
marked dirty (:class:`bot.services.home.HomeRefresher`; the marks come from the sessions follower and
the credit-limit workflow through :class:`bot.services.home.HomeMarks`).

The role check ran before (policy key :data:`bot.services.sessions.HOME_POLICY_KEY`, given by
:meth:`bot.services.sessions.Sessions.event_policy`); ``context["agent_user"]`` says who opened it.
The buttons of the Home are served by the listeners of their other surfaces (:mod:`handlers.sessions`,
:mod:`handlers.limits`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext

from bot.errors import reported
from bot.roles import ResolvedUser
from bot.services.home import HASH_CONFLICT, HomeCharts, HomeService, publish_home
from bot.slack import SlackFailure
from formatters.home import home_view
from handlers.router import Router
from handlers.session_shortcut import suggested_prompts
from handlers.sessions import hint_once

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

EVENT: Final = "app_home_opened"
HOME_TAB: Final = "home"
MESSAGES_TAB: Final = "messages"


def home_service(services: Services, *, charts: HomeCharts | None = None) -> HomeService:
    """The :class:`HomeService` over the bot's services (a light object: built for each event);
    ``charts`` makes the managers' chart (a new :class:`HomeCharts` when None)."""
    return HomeService(
        agent=services.agent,
        store=services.store,
        limits=services.limits.store,
        policy=services.policy,
        today=services.today,
        now=services.now,
        alerts=services.alerts.repo,
        people=services.identity.people_of,
        charts=charts or home_charts(services),
    )


def home_charts(services: Services) -> HomeCharts:
    """The managers' chart maker over the bot's services."""
    return HomeCharts(agent=services.agent, store=services.store, slack=services.slack, now=services.now)


async def publish(
    home: HomeService, services: Services, user: ResolvedUser, *, hash: str | None = None, dm_channel: str | None = None
) -> bool:
    """Record the open, gather, format and publish the Home of ``user`` (again without ``hash`` when
    that one is stale: module docstring), and record what Slack answered; False when Slack refused
    it (logged)."""
    tabs = services.home
    opened = await tabs.opened(user.user_id, role=user.role, dm_channel=dm_channel, now=services.now())
    gathered = await home.gather(user, dm_channel=dm_channel or opened.dm_channel)
    published = await publish_home(services.slack, gathered, home_view, hash=hash, charts=home.charts)
    if hash and isinstance(published, SlackFailure) and published.error == HASH_CONFLICT:
        published = await publish_home(services.slack, gathered, home_view, hash=None, charts=home.charts)
    if isinstance(published, SlackFailure):
        logger.warning("Home tab of %s not published: %s", user.user_id, published.error)
        return False
    await tabs.published(user.user_id, version=opened.dirty_version, view_hash=published, now=services.now())
    return True


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Listen to ``app_home_opened`` (nothing of ``services`` is read before an event comes)."""

    @reported
    async def on_home_opened(ack: AsyncAck, event: dict[str, Any], context: AsyncBoltContext) -> None:
        await ack()
        user: ResolvedUser | None = context.get("agent_user")
        if user is None:
            return  # an event the role check did not pass on as someone's
        channel = str(event.get("channel") or "") or None
        if event.get("tab") == MESSAGES_TAB:
            if channel:
                await hint_once(services, user.user_id, channel)
                await suggested_prompts(services).offer(user.user_id, channel)  # once a day (issue #28)
            return
        if event.get("tab") != HOME_TAB:
            return
        await publish(home_service(services), services, user, hash=(event.get("view") or {}).get("hash") or None, dm_channel=channel)

    app.event(EVENT)(on_home_opened)
