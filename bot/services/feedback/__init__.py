"""Feedback on the agent's answers: the 👍/👎 of each finished turn, a 👎's "what went wrong", and
what managers read of them (``/agent sessions feedback``, a line of the daily digest).

- :mod:`bot.services.feedback.store`: the ``answer_votes`` table (one vote per person and turn, the
  unique key the exactly-once fact) and its store;
- :mod:`bot.services.feedback.service`: :class:`Feedback`, the service the handlers
  (:mod:`handlers.feedback`) and the digest use.
"""

from bot.services.feedback.service import (
    COMMENT_ACTION,
    COMMENT_VIEW,
    COMMENTS_SHOWN,
    DEFAULT_PERIOD,
    FEEDBACK_ACTION,
    PERIODS,
    Feedback,
    FeedbackReport,
    Voted,
    button_value,
    parse_value,
    period_days,
)
from bot.services.feedback.store import COMMENT_MAX, DOWN, UP, Comment, FeedbackStore, Recorded, Tally, Turn, answer_votes

__all__ = [
    "COMMENTS_SHOWN",
    "COMMENT_ACTION",
    "COMMENT_MAX",
    "COMMENT_VIEW",
    "DEFAULT_PERIOD",
    "DOWN",
    "FEEDBACK_ACTION",
    "PERIODS",
    "UP",
    "Comment",
    "Feedback",
    "FeedbackReport",
    "FeedbackStore",
    "Recorded",
    "Tally",
    "Turn",
    "Voted",
    "answer_votes",
    "button_value",
    "parse_value",
    "period_days",
]
