"""What went wrong, said to the person who asked: input the bot cannot use, and Agent API failures.

:class:`UserInputError` is raised by services and handlers when the input is the problem
(``message`` says what, ``hint`` what to do); :func:`describe_api_error` turns any
:class:`bot.api.AgentAPIError` into the same two parts. The command router and the action wrapper
(:mod:`handlers.router`) turn both into an ephemeral error message; nothing else reaches Slack.
"""

from __future__ import annotations

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


def describe_api_error(exc: api_errors.AgentAPIError) -> tuple[str, str]:
    """What an Agent API failure means for the person who asked, and what to do: ``(what, hint)``."""
    if isinstance(exc, api_errors.AgentAPIValidationError):
        return str(exc), "Check the value and try again; `/agent help` shows the syntax."
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
