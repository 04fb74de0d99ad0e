"""Why a request did nothing: one vocabulary for every service (docs/architecture.md, "Outcomes").

A service that did not do what was asked says why with one of four typed reasons, returned (or, where
a deep call path makes returning awkward, raised inside :class:`Declined`). Services never build
Block Kit: a handler, or a formatter handed in at wiring, turns the reason into words
(:func:`formatters.notices.outcome_message`).

- :class:`Refused`: the person may not do it (their role, the session's starter, a computer rule,
  the platform's own permissions); ``who_can_help`` names who may.
- :class:`NotFound`: the thing named does not exist (a session, a request, a computer).
- :class:`NothingChanged`: it is already so (a request already decided, a channel already muted).
- :class:`Invalid`: the input cannot be used (a malformed value, out of range); ``hint`` says what to do.

``Declined`` -> ``bot.user_errors.UserInputError`` (an :class:`Invalid` raised) is the exception tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Refused:
    """The person may not do this. ``action``: what was tried, in words ("archive session 1a2b3c4d");
    ``reason``: why, in words ("only its starter or a manager may"); ``needs``: the least role that
    may (``"manager"``), when a role decides; ``who_can_help``: Slack user IDs (``U…``) or ``@group``
    handles of people who may, at most a handful."""

    action: str
    reason: str = ""
    needs: str | None = None
    who_can_help: tuple[str, ...] = ()


@dataclass(frozen=True)
class NotFound:
    """``what`` (a noun: "session", "request", "computer") named ``key`` does not exist;
    ``hint`` says where to look ("`/agent sessions` lists them")."""

    what: str
    key: str
    hint: str = ""


@dataclass(frozen=True)
class NothingChanged:
    """It is already so: ``message`` says what stands ("Request #12 is already applied")."""

    message: str
    hint: str = ""


@dataclass(frozen=True)
class Invalid:
    """The input cannot be used: ``message`` says what, ``hint`` what to do."""

    message: str
    hint: str = ""


Outcome = Refused | NotFound | NothingChanged | Invalid
"""Any reason a request did nothing."""


@dataclass(eq=False)  # exceptions stay hashable (compared by identity)
class Declined(Exception):
    """An :data:`Outcome` raised where a service cannot simply return it; handlers catch it once
    (the command router and the action wrapper) and say ``outcome`` in words."""

    outcome: Outcome
    detail: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.outcome)
