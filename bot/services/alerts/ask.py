"""What an alert asks the agent (issue #28 part 4): the prompt of its *Ask the agent* button and of an
autorun session, in words a person would write, and the computer the session goes to.

Pure: an alert's facts in, :class:`Ask` out; no Block Kit (the formatters put an :class:`Ask` into
a button's value with :meth:`Ask.encode`, the click handler reads it back with :meth:`Ask.decode`).
Texts from the API (a computer's name, a step, an error, a criterion id, a repository) are kept as
plain text on one line: the prompt goes to the agent and into a form's ``initial_value``, where
nothing is rendered; the opening ``<`` of Slack's markup in them (``<!channel>``, ``<@U1>``,
``<https://...>``) is written as a single left-pointing angle quotation mark (U+2039), so neither the
button's value nor the session's messages carry a ping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

ASK_ACTION: Final = "alerts.ask_agent"
"""The action id of the *Ask the agent* button (its value: :meth:`Ask.encode`); a policy key read as
``session start`` (:data:`bot.policy.POLICY_ALIASES`)."""
VALUE_MAX: Final = 2000
"""Characters at most of a button's value (Slack doc "Button element": ``value`` 2,000)."""
ERROR_MAX: Final = 300
"""Characters of a step's error quoted in a prompt (one line)."""
CRITERIA_NAMED: Final = 10
"""Criteria a readiness prompt names; the rest are counted."""

COMPUTER_FAILED: Final = "Computer {name} failed at step `{step}`: find out why and fix it."
COMPUTER_FAILED_NO_STEP: Final = "Computer {name} went into error during provisioning: find out why and fix it."
COMPUTER_ERROR: Final = "The step's error: {error}"
CRITERION_ONE: Final = "Make criterion `{key}` ({words}) pass in {repo}."
CRITERION_ONE_PLAIN: Final = "Make criterion `{key}` pass in {repo}."
CRITERIA_MANY: Final = "Make these readiness criteria pass in {repo}: {names}."
CRITERIA_MORE: Final = " and {n} more"


_SLACK_MARKUP = re.compile(r"<(?=[!@#]|https?:|mailto:)", re.IGNORECASE)
"""The opening ``<`` of Slack's markup (a ping, a mention, a link: Slack doc "Formatting text for app
surfaces"); an API string's is written U+2039 (a single angle quotation mark) so a prompt never carries one into Slack again."""


def _one_line(text: str, limit: int) -> str:
    """``text`` on one line, its invisible characters (bidi controls, zero widths) left out, Slack's
    markup defused (:data:`_SLACK_MARKUP`), cut to ``limit``."""
    one = " ".join("".join(ch for ch in text if ch.isprintable() or ch.isspace()).split())
    one = _SLACK_MARKUP.sub("\u2039", one)
    return one if len(one) <= limit else one[: limit - 1] + "\u2026"


@dataclass(frozen=True)
class Ask:
    """What to ask the agent: ``prompt`` (plain text) and, for a computer's alert, ``computer_id``
    (the session goes there; None: the channel's default computer, else the person's choice)."""

    prompt: str
    computer_id: str | None = None

    def encode(self) -> str:
        """JSON ``{"p": prompt, "c": computer id}`` of at most :data:`VALUE_MAX` characters (the prompt
        cut to fit): a button's value."""
        prompt = self.prompt
        while True:
            text = json.dumps({"p": prompt, "c": self.computer_id}, ensure_ascii=False, separators=(",", ":"))
            if len(text) <= VALUE_MAX or not prompt:
                return text
            prompt = prompt[: max(len(prompt) - (len(text) - VALUE_MAX) - 1, 0)]

    @classmethod
    def decode(cls, value: str) -> Ask | None:
        """The :class:`Ask` :meth:`encode` made; None for anything else (a stale or forged value)."""
        try:
            data = json.loads(value)
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("p"), str) or not data["p"].strip():
            return None
        computer = data.get("c")
        return cls(data["p"], computer if isinstance(computer, str) and computer else None)


def computer_ask(computer_id: str, name: str | None, step: str | None, error: str | None) -> Ask:
    """The ask of a computer in error: ``Computer ci-2 failed at step `Install dependencies`: find
    out why and fix it.`` and the step's error on a line of its own; on that computer."""
    said = _one_line(name or computer_id, 100)
    prompt = (
        COMPUTER_FAILED.format(name=said, step=_one_line(step, 100).replace("`", "'"))
        if step
        else COMPUTER_FAILED_NO_STEP.format(name=said)
    )
    if error and error.strip():
        prompt += "\n" + COMPUTER_ERROR.format(error=_one_line(error, ERROR_MAX))
    return Ask(prompt, computer_id)


def criteria_ask(repo: str, criteria: Sequence[str], words: Callable[[str], str]) -> Ask | None:
    """The ask of failing readiness criteria of ``repo`` (their ids; ``words`` says an id in words,
    :func:`formatters.reports.criterion_words`): ``Make criterion `lint_config` (Lint config) pass in
    acme/web.``; several: each named so (at most :data:`CRITERIA_NAMED`, then counted). The id is
    kept, in code, as the key an operator types; the words only where they say more than it. None
    without criteria."""
    if not criteria:
        return None

    def named(criterion: str) -> tuple[str, str]:
        key = _one_line(criterion, 100).replace("`", "'")
        said = _one_line(words(criterion), 100)
        return key, ("" if said.lower() == key.lower() or not said else said)

    if len(criteria) == 1:
        key, said = named(criteria[0])
        where = _one_line(repo, 200)
        return Ask(CRITERION_ONE.format(key=key, words=said, repo=where) if said else CRITERION_ONE_PLAIN.format(key=key, repo=where))
    names = ", ".join(f"`{key}` ({said})" if said else f"`{key}`" for key, said in map(named, criteria[:CRITERIA_NAMED]))
    if len(criteria) > CRITERIA_NAMED:
        names += CRITERIA_MORE.format(n=len(criteria) - CRITERIA_NAMED)
    return Ask(CRITERIA_MANY.format(repo=_one_line(repo, 200), names=names))
