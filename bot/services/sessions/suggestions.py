"""Suggested prompts in the Messages tab (issue #28, part 5): when a person opens the app's
Messages tab (``app_home_opened`` with ``tab: messages``), the bot offers up to four prompts made
from their own recent sessions (their requests, to run again) and the working directories
(repositories) those ran in, else a few general ones.

Where Slack shows agent prompts, they are set with ``assistant.threads.setSuggestedPrompts`` (Slack
doc https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts: up to four,
each a title and a message; for an agent app without ``thread_ts``): a click sends the prompt as the
person's own DM, which starts a session as any DM does. Where Slack refuses them (an app without
the agent view or ``assistant:write``), a short message with a button per prompt goes to the DM
instead (its words: the ``fallback`` formatter handed in; a click starts the prompt, once).

Once per person per period (a UTC day): the claim is a row of ``deliveries`` (:meth:`bot.store.Store.claim`,
key ``suggested-prompts:<user>:<day>``), so several replicas and repeated opens offer them once.
"""

from __future__ import annotations

import datetime as dt
import logging
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from sqlalchemy.exc import SQLAlchemyError

from bot.services.sessions.context import split_prompt
from bot.services.sessions.store import SessionLink, SessionStore
from bot.slack import Payload, SlackFailure, SlackGateway
from bot.store import DatabaseUnusable, Store

logger = logging.getLogger(__name__)

SUGGESTIONS_MAX: Final = 4
RECENT_READ: Final = 200
"""Started sessions read to find a person's own (newest first)."""
TITLE_MAX: Final = 40
PROMPTS_TITLE: Final = "Pick up where you left off"
CLAIM_KEY: Final = "suggested-prompts:{user}:{day}"
AGAIN_TITLE: Final = "Again: {request}"
REPO_TITLE: Final = "Tests in {name}"
REPO_PROMPT: Final = "cwd={cwd} Run the tests and fix what fails"
GENERAL: Final = (
    ("Find a flaky test", "Find the flakiest test in this repository and make it reliable"),
    ("Explain the layout", "Explain this repository's layout and where to start reading"),
    ("Update dependencies", "Update the outdated dependencies and make sure the tests pass"),
)
"""What a person with no sessions yet is offered."""

Offered = Literal["prompts", "message", "claimed", "failed"]


@dataclass(frozen=True)
class Suggestion:
    """A prompt offered: ``title`` (short, what the list shows) and ``message`` (what is sent as the task)."""

    title: str
    message: str


def suggestions_for(rows: Sequence[SessionLink], user_id: str) -> list[Suggestion]:
    """Up to :data:`SUGGESTIONS_MAX` prompts for ``user_id`` from ``rows`` (sessions, newest first):
    their two newest distinct requests (a thread's context left out), then the working directories
    of their sessions (the tests there), then :data:`GENERAL` to fill up."""
    own = [r for r in rows if r.slack_user == user_id]
    found: list[Suggestion] = []
    requests = list(dict.fromkeys(" ".join(split_prompt(r.prompt)[0].split()) for r in own))
    for request in [r for r in requests if r][:2]:
        found.append(Suggestion(_short(AGAIN_TITLE.format(request=request)), request))
    for cwd in list(dict.fromkeys(r.cwd for r in own if r.cwd and " " not in r.cwd))[:2]:
        name = posixpath.basename(cwd.rstrip("/")) or cwd
        found.append(Suggestion(_short(REPO_TITLE.format(name=name)), REPO_PROMPT.format(cwd=cwd)))
    for title, message in GENERAL:
        if len(found) >= SUGGESTIONS_MAX:
            break
        found.append(Suggestion(title, message))
    return found[:SUGGESTIONS_MAX]


def _short(text: str) -> str:
    return text if len(text) <= TITLE_MAX else text[: TITLE_MAX - 1] + "\u2026"


class SuggestedPrompts:
    """Offers the Messages tab's prompts (module docstring): ``sessions`` (the rows), ``store`` (the
    claim), ``slack`` (the gateway), ``today`` (the UTC date clock), ``fallback`` (the message of
    buttons, from ``[(title, message), ...]``: a formatter handed in)."""

    def __init__(
        self,
        *,
        sessions: SessionStore,
        store: Store,
        slack: SlackGateway,
        today: Callable[[], dt.date],
        fallback: Callable[[Sequence[tuple[str, str]]], Payload],
    ) -> None:
        self.sessions = sessions
        self.store = store
        self.slack = slack
        self.today = today
        self.fallback = fallback

    async def offer(self, user_id: str, dm_channel: str) -> Offered:
        """Offer ``user_id`` their prompts in their DM ``dm_channel`` once this period: ``prompts``
        (set as Slack's suggested prompts), ``message`` (the fallback message posted), ``claimed``
        (offered before this period, by any replica: nothing done) or ``failed`` (the database or
        Slack refused; logged)."""
        try:
            if not await self.store.claim(CLAIM_KEY.format(user=user_id, day=self.today().isoformat())):
                return "claimed"
        except (SQLAlchemyError, DatabaseUnusable) as exc:
            logger.warning("could not claim the suggested prompts of %s: %s", user_id, type(exc).__name__)
            return "failed"
        offered = suggestions_for(await self.sessions.recent(RECENT_READ), user_id)
        pairs = [(s.title, s.message) for s in offered]
        set_ = await self.slack.set_suggested_prompts(dm_channel, pairs, title=PROMPTS_TITLE)
        if not isinstance(set_, SlackFailure):
            return "prompts"
        logger.info("suggested prompts for %s refused (%s); sending them as a message", user_id, set_.error)
        posted = await self.slack.post(dm_channel, self.fallback(pairs))
        return "failed" if isinstance(posted, SlackFailure) else "message"
