"""The App Home tab: published for whoever opens it, with what their role shows.

``app_home_opened`` (Slack doc https://docs.slack.dev/reference/events/app_home_opened) with
``tab: home``: ack, gather the person's Home (:class:`bot.services.home.HomeService`, sections read
concurrently, each bounded, a failing one shown as its error), format it
(:func:`formatters.home.home_view`) and publish it (:meth:`bot.slack.SlackGateway.publish_home`,
``views.publish``) with the ``hash`` of the view the event carries, so that Slack drops this publish
when a newer one happened meanwhile (``hash_conflict``, logged). The Messages tab (``tab:
messages``) publishes nothing.

The role check ran before (policy key :data:`bot.services.sessions.HOME_POLICY_KEY`, given by
:meth:`bot.services.sessions.Sessions.event_policy`); ``context["agent_user"]`` says who opened it.
The buttons of the Home are served by the listeners of their other surfaces (:mod:`handlers.sessions`,
:mod:`handlers.limits`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from slack_bolt.async_app import AsyncApp

from bot.errors import reported
from bot.roles import ResolvedUser
from bot.services.home import HomeService
from bot.slack import SlackFailure
from formatters.home import home_view
from handlers.router import Router

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

EVENT: Final = "app_home_opened"
HOME_TAB: Final = "home"


def home_service(services: Services) -> HomeService:
    """The :class:`HomeService` over the bot's services (a light object: built for each event)."""
    return HomeService(
        agent=services.agent,
        store=services.store,
        limits=services.limits.store,
        policy=services.policy,
        today=services.today,
        now=services.now,
    )


async def publish(home: HomeService, services: Services, user: ResolvedUser, *, hash: str | None = None) -> bool:
    """Gather, format and publish the Home of ``user``; False when Slack refused it (logged)."""
    view = home_view(await home.gather(user))
    published = await services.slack.publish_home(user.user_id, view, hash=hash)
    if isinstance(published, SlackFailure):
        logger.warning("Home tab of %s not published: %s", user.user_id, published.error)
        return False
    return True


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Listen to ``app_home_opened`` (nothing of ``services`` is read before an event comes)."""

    @reported
    async def on_home_opened(ack: Any, event: dict[str, Any], context: dict[str, Any]) -> None:
        await ack()
        user: ResolvedUser | None = context.get("agent_user")
        if user is None or event.get("tab") != HOME_TAB:
            return  # the Messages tab, or an event the role check did not pass on as someone's
        await publish(home_service(services), services, user, hash=(event.get("view") or {}).get("hash") or None)

    app.event(EVENT)(on_home_opened)
