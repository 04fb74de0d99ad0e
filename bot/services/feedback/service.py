"""Feedback on the agent's answers (issue #27, part 4): :class:`Feedback` records the 👍/👎 a person
gives an agent turn and the "what went wrong" of a 👎, and reads them back for managers
(``/agent sessions feedback``) and the daily digest.

The buttons are the ``feedback_buttons`` element of each finished turn's closing blocks (Slack doc
"Feedback buttons element"; block and action id :data:`FEEDBACK_ACTION`), each valued
``up:<session id>`` / ``down:<session id>`` (:func:`parse_value`). What answered (the computer and
the model) is read when the vote is cast: from the bot's own ``agent_sessions`` row (read only,
:meth:`bot.services.sessions.store.SessionStore.by_session_id`), and the model from the platform
(``GET /sessions/{id}``, ``sessionSettings.model``: management-api-v0.md, "Session") when the row
has none (the session runs on the default model, or was changed since with ``session set``).
A session neither knows is said as :class:`bot.outcomes.NotFound`.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from bot.api import AgentAPIError, NotFoundError
from bot.outcomes import Declined, Invalid, NotFound
from bot.services.feedback.store import DOWN, UP, VOTES, Comment, FeedbackStore, Recorded, Tally, Turn
from bot.store import Store

if TYPE_CHECKING:
    from bot.api import AgentClient
    from bot.services.sessions.store import SessionLink

logger = logging.getLogger(__name__)

FEEDBACK_ACTION: Final = "session_feedback"
"""The ``block_id`` and ``action_id`` of the turn's ``feedback_buttons`` (the contract with the
streamed display, :mod:`bot.services.sessions`), and the policy key of a click."""
COMMENT_ACTION: Final = "session_feedback.comment"
"""The button that opens the "what went wrong" form when it could not open at the 👎 itself."""
COMMENT_VIEW: Final = "session_feedback.why"
"""The ``callback_id`` of the "what went wrong" form."""
PERIODS: Final = {"7d": 7, "30d": 30}
"""The report's periods (``/agent sessions feedback [7d|30d]``), in days back from now."""
DEFAULT_PERIOD: Final = "7d"
COMMENTS_SHOWN: Final = 5
"""How many of the latest comments the report shows."""

UNREADABLE = "I cannot read this feedback button."
UNREADABLE_HINT = "Use the buttons under the agent's latest answer in the session's thread."
NO_SESSION_HINT = "The session may have been deleted on the platform; your vote was not kept."
SESSION_WHAT = "session"
BAD_PERIOD = "I can show the feedback of the last 7 or 30 days, not `{given}`."
BAD_PERIOD_HINT = "Try `/agent sessions feedback 7d` or `/agent sessions feedback 30d`."

SessionRow = Callable[[str], Awaitable["SessionLink | None"]]
"""The bot's row of a session by its id (:meth:`bot.services.sessions.store.SessionStore.by_session_id`)."""


def button_value(vote: str, session_id: str) -> str:
    """A feedback button's ``value``: ``"up:<session id>"`` or ``"down:<session id>"`` (read back by
    :func:`parse_value`)."""
    return f"{vote}:{session_id}"


def parse_value(value: str) -> tuple[str, str]:
    """``"up:<session id>"`` -> ``("up", "<session id>")``. Raises
    :class:`bot.outcomes.Declined` (:class:`bot.outcomes.Invalid`) for anything else."""
    vote, sep, session_id = (value or "").strip().partition(":")
    session_id = session_id.strip()
    if not sep or vote not in VOTES or not session_id or len(session_id) > 255 or any(c.isspace() for c in session_id):
        raise Declined(Invalid(UNREADABLE, UNREADABLE_HINT))
    return vote, session_id


def period_days(args: tuple[str, ...]) -> tuple[str, int]:
    """The report's period from the command's arguments: ``()`` -> ``("7d", 7)``, ``("30d",)`` ->
    ``("30d", 30)``. Raises :class:`bot.outcomes.Declined` (:class:`bot.outcomes.Invalid`) otherwise."""
    given = " ".join(args).strip().lower() or DEFAULT_PERIOD
    if given not in PERIODS:
        raise Declined(Invalid(BAD_PERIOD.format(given=" ".join(args)[:40].replace("`", "\u02cb")), BAD_PERIOD_HINT))
    return given, PERIODS[given]


@dataclass(frozen=True)
class Voted:
    """What :meth:`Feedback.vote` did: ``recorded`` (new, changed, or the same as before) and the ``vote``."""

    vote: str
    recorded: Recorded


@dataclass(frozen=True)
class FeedbackReport:
    """The feedback of ``[since, until)`` (``period``: ``7d`` or ``30d``): ``total`` (its ``name``
    None), per ``computers`` and per ``models`` (most votes first; a ``name`` None is unknown, or
    the default model), and the latest ``comments`` (newest first)."""

    period: str
    since: dt.datetime
    until: dt.datetime
    total: Tally
    computers: tuple[Tally, ...]
    models: tuple[Tally, ...]
    comments: tuple[Comment, ...]


class Feedback:
    """Votes on the agent's answers: record (:meth:`vote`, :meth:`comment`) and read (:meth:`report`,
    :meth:`rated_on`). ``store`` is the bot's database; ``session_row`` the bot's row of a session
    (read only); ``agent`` the Agent API client (the bot's key: a read of the session's settings);
    ``now`` the injected clock (aware UTC)."""

    def __init__(self, *, store: Store, session_row: SessionRow, agent: AgentClient, now: Callable[[], dt.datetime]) -> None:
        self.votes = FeedbackStore(store)
        self.session_row = session_row
        self.agent = agent
        self.now = now

    async def vote(self, turn: Turn, voter: str, vote: str) -> Voted:
        """Record ``voter``'s ``vote`` on ``turn``, once per person and turn (a second click changes
        it, the same click again changes nothing). Raises :class:`bot.outcomes.Declined` with
        :class:`bot.outcomes.NotFound` when neither the bot nor the platform knows the session,
        ``ValueError`` for a vote other than ``up``/``down``, ``sqlalchemy.exc.SQLAlchemyError``."""
        if vote not in VOTES:
            raise ValueError(f"a vote is {UP!r} or {DOWN!r}, not {vote!r}")
        row = await self.session_row(turn.session_id)
        computer = (row.computer_name or row.computer_id) if row is not None else None
        model = row.model if row is not None else None
        if row is None or model is None:
            try:
                session = await self.agent.get_session(session_id=turn.session_id)
            except NotFoundError:
                if row is None:
                    raise Declined(NotFound(SESSION_WHAT, turn.session_id, NO_SESSION_HINT)) from None
            except AgentAPIError as exc:  # what answered stays unknown; the vote is kept all the same
                logger.warning("feedback on %s: the session's settings could not be read (%s)", turn.session_id, type(exc).__name__)
            else:
                computer = computer or session.computer_id
                model = (session.session_settings.model if session.session_settings else None) or model
        if row is not None and not turn.thread_ts:
            turn = Turn(turn.session_id, turn.channel, turn.message_ts, row.thread_ts)
        recorded = await self.votes.vote(turn, voter, vote, computer=computer, model=model, now=self.now())
        logger.info("feedback on session %s turn %s by %s: %s (%s)", turn.session_id, turn.message_ts, voter, vote, recorded.value)
        return Voted(vote, recorded)

    async def comment(self, turn: Turn, voter: str, text: str) -> None:
        """Keep ``text`` as the "what went wrong" of ``voter``'s 👎 on ``turn`` (recording the 👎
        first when it is not there: a vote that failed, or changed to 👍 since). Raises as :meth:`vote`."""
        if not await self.votes.set_comment(turn, voter, text):
            await self.vote(turn, voter, DOWN)
            await self.votes.set_comment(turn, voter, text)

    async def report(self, period: str, days: int) -> FeedbackReport:
        """The feedback of the last ``days`` days up to now (``period`` names them: ``7d``, ``30d``)."""
        until = self.now()
        since = until - dt.timedelta(days=days)
        total = await self.votes.tallies(since, until)
        return FeedbackReport(
            period=period,
            since=since,
            until=until,
            total=total[0] if total else Tally(None, 0, 0, 0),
            computers=tuple(await self.votes.tallies(since, until, by="computer")),
            models=tuple(await self.votes.tallies(since, until, by="model")),
            comments=tuple(await self.votes.comments(since, until, limit=COMMENTS_SHOWN)),
        )

    async def rated_on(self, day: dt.date) -> Tally | None:
        """The votes cast on the UTC ``day`` (:meth:`FeedbackStore.rated_on`)."""
        return await self.votes.rated_on(day)
