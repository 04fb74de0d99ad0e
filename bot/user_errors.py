"""What went wrong, said to the person who asked: input the bot cannot use, and Agent API failures.

:class:`UserInputError` is raised by services and handlers when the input is the problem
(``message`` says what, ``hint`` what to do); :func:`describe_api_error` turns any
:class:`bot.api.AgentAPIError` into the same two parts. The command router and the action wrapper
(:mod:`handlers.router`) turn both into an ephemeral error message; nothing else reaches Slack.
"""

from __future__ import annotations

from typing import Final

from bot.api import errors as api_errors
from bot.outcomes import Declined, Invalid


class UserInputError(Declined):
    """A handler cannot do what was asked because of the input: ``message`` says what, ``hint`` what
    to do; a :class:`bot.outcomes.Declined` whose outcome is :class:`bot.outcomes.Invalid`."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(Invalid(message, hint))
        self.message, self.hint = message, hint

    def __str__(self) -> str:
        return self.message


YOUR_KEY_REFUSED: Final = "The platform refused your API key; link it again with `/agent link`."
YOUR_KEY_REFUSED_HINT: Final = (
    "Make a new key in the web application's API-key settings if yours was revoked; nothing was sent with another key."
)
REFUSED_FOR_YOU: Final = "The platform refused this for you: {message}"
REFUSED_FOR_YOU_HINT: Final = "Your role on the platform decides what your key may do; ask the session's starter, a manager or an owner."


def describe_api_error(exc: api_errors.AgentAPIError, *, your_key: bool = False) -> tuple[str, str]:
    """What an Agent API failure means for the person who asked, and what to do: ``(what, hint)``
    (plain text: the formatter escapes it). ``your_key``: the request went with the person's own
    linked key (:mod:`bot.services.sessions.acting`), so a 401 is their key refused
    (:data:`YOUR_KEY_REFUSED`) and a 403 the platform's own refusal of them, its message quoted
    (:data:`REFUSED_FOR_YOU`); otherwise both are about the bot's key."""
    if isinstance(exc, api_errors.AgentAPIValidationError):
        return str(exc), "Check the value and try again; `/agent help` shows the syntax."
    if your_key and isinstance(exc, api_errors.UnauthorizedError):
        return YOUR_KEY_REFUSED, YOUR_KEY_REFUSED_HINT
    if your_key and isinstance(exc, api_errors.ForbiddenError):
        said = getattr(exc, "detail", None) or getattr(exc, "title", None) or "it gave no reason"
        return REFUSED_FOR_YOU.format(message=" ".join(str(said).split())[:300]), REFUSED_FOR_YOU_HINT
    if isinstance(exc, api_errors.UnauthorizedError):
        return "The Agent platform refused the bot's API key.", "Whoever runs the bot should check AGENT_API_KEY."
    if isinstance(exc, api_errors.ForbiddenError):
        return (
            "The bot's API key lacks the role this needs on the Agent platform (analytics need Manager or Owner).",
            "Whoever runs the bot should use a key of a Manager or Owner.",
        )
    if isinstance(exc, api_errors.NotFoundError):
        return "The Agent platform does not know that item.", "Check the id and try again."
    if isinstance(exc, api_errors.RateLimitedError):
        wait = f" about {int(exc.retry_after)} s" if exc.retry_after else " a moment"
        return "The Agent platform is rate-limiting the bot.", f"Try again in{wait}."
    if isinstance(exc, api_errors.AgentAPITimeoutError):
        return "The Agent platform did not answer in time.", "Try again in a minute."
    if isinstance(exc, api_errors.ConnectionFailedError):
        return "The bot cannot reach the Agent platform.", "Try again later; whoever runs the bot should check AGENT_API_URL."
    if isinstance(exc, api_errors.ServerError):
        return "The Agent platform had an internal error.", "Try again in a few minutes."
    if isinstance(exc, api_errors.BadRequestError):
        detail = getattr(exc, "detail", None) or str(exc)
        return f"The Agent platform rejected the request: {detail}", "Check the command and try again."
    if isinstance(exc, api_errors.MalformedResponseError):
        return "The Agent platform sent an answer the bot cannot read.", "Try again later; if it persists, report it."
    return "The Agent platform call failed.", "Try again later."
