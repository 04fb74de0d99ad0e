"""``POST /hooks/agent``: agent hook events (signed by ``agent-bot hook``) reaching Slack at once.

:func:`receive` checks and routes one delivery (management-api-v0.md, "Events"; signing in
:mod:`bot.hooks`) and answers ``(HTTP status, JSON body)``:

- 503 when ``AGENT_BOT_HOOK_SECRET`` is not set (hooks are off); 400 for a body over
  :data:`bot.hooks.MAX_BODY_BYTES`, malformed JSON, or an object without ``hook_event_name`` and
  ``session_id`` strings; 401 for a missing, stale or wrong signature (nothing is done);
- 200 ``duplicate`` for a delivery seen before (a claim row keyed by the signed body);
- a session the bot started from Slack: into its thread. ``Notification``: "The agent is waiting
  for you" with the event's ``message``, mentioning who started the session; ``Stop``: "Done" and an
  immediate poll, so the final answer is posted now; ``SessionEnd``: the reason, a last poll, and the
  follower stops; ``SubagentStop``: a poll only (the working message moves). The session is marked as
  one whose client sends hooks, so the follower polls it every 30 s instead of every second. 200.
- any other session, when ``user`` (``AGENT_BOT_HOOK_USER``) is the e-mail of a Slack user: a DM with
  the same words and the working directory. 200.
- otherwise: logged, 202, dropped.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from typing import Any

from bot.hooks import EVENTS, MAX_BODY_BYTES, SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from bot.slack import SlackFailure
from formatters.sessions import hook_dm, hook_note

logger = logging.getLogger(__name__)

_background: set[asyncio.Task[Any]] = set()


async def receive(services: Any, headers: Any, body: bytes) -> tuple[int, dict[str, str]]:
    """Check, de-duplicate and route one hook delivery (module docstring)."""
    secret = services.settings.hook_secret
    if secret is None:
        return 503, {"error": "hooks are not configured on this bot (AGENT_BOT_HOOK_SECRET)"}
    if len(body) > MAX_BODY_BYTES:
        return 400, {"error": f"body larger than {MAX_BODY_BYTES} bytes"}
    if not verify(
        secret.get_secret_value(),
        timestamp=headers.get(TIMESTAMP_HEADER),
        signature=headers.get(SIGNATURE_HEADER),
        body=body,
        now=lambda: services.now().timestamp(),
    ):
        logger.warning("hook delivery refused: missing, stale or wrong signature")
        return 401, {"error": "missing, stale or wrong signature"}
    try:
        event = json.loads(body)
    except ValueError:
        return 400, {"error": "body is not JSON"}
    if not isinstance(event, dict) or not all(isinstance(event.get(k), str) for k in ("hook_event_name", "session_id")):
        return 400, {"error": "a hook event needs hook_event_name and session_id strings"}
    digest = hashlib.sha256(headers.get(TIMESTAMP_HEADER, "").encode() + b":" + body).hexdigest()
    if not await services.store.claim(f"hook:{digest}"):
        return 200, {"status": "duplicate"}
    name = event["hook_event_name"]
    if name not in EVENTS:
        logger.info("hook event of an unknown kind dropped")
        return 202, {"status": "dropped: unknown event"}
    feature = services.sessions
    link = await feature.store.by_session_id(event["session_id"])
    if link is not None:
        await to_thread(services, feature, link, name, event)
        return 200, {"status": "posted to the session's thread"}
    user = event.get("user")
    if isinstance(user, str) and user and name in ("Notification", "Stop", "SessionEnd"):
        slack_user = await services.identity.user_of_email(user)
        if slack_user:
            sent = await services.slack.post(slack_user, hook_dm(name, event))
            if isinstance(sent, SlackFailure):
                return 502, {"status": f"Slack refused the direct message ({sent.error})"}
            return 200, {"status": "sent as a direct message"}
    logger.info("hook %s for a session the bot does not follow, and no known user: dropped", name)
    return 202, {"status": "dropped: unknown session and user"}


async def to_thread(services: Any, feature: Any, link: Any, name: str, event: dict) -> None:
    """Route a hook of a followed session: a note in its thread, then a poll (in the background)."""
    now = services.now()
    await feature.store.wake(link.id, now, hooks=True)
    if name != "SubagentStop":
        await feature.follower.post_in_thread(link, hook_note(name, event, link.slack_user))

    async def poll() -> None:
        try:
            polled = await feature.follower.poll_now(link.id)
            if name == "SessionEnd" and polled:  # else the replica that holds it polls, then idles out
                await feature.store.stop_following(link.id)
        except Exception:
            logger.exception("poll after a %s hook failed", name)

    task = asyncio.create_task(poll())
    _background.add(task)
    task.add_done_callback(_background.discard)


def register(app: Any, router: Any, services: Any) -> None:
    """Nothing to add to the Bolt app: :func:`receive` is served by ``Bot.asgi`` (``POST
    /hooks/agent``) and by the Socket Mode hook listener."""
    del app, router, services
