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

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from bot.services.readiness import Criterion, Report

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
COMPUTER_SINCE: Final = "It went into error at {since} (computer id `{id}`)."
CRITERION_WHY: Final = "Why it fails, in the report's words: {rationale}"
CRITERION_NO_WHY: Final = "The report gives no reason why it fails."
CRITERIA_WHY: Final = "Why they fail, in the report's words:"
CRITERIA_WHY_ONE: Final = "- `{key}`: {rationale}"
CRITERIA_NO_WHY: Final = "no reason given"
REPORT_FROM: Final = "From readiness report {report} of {when}{where}"
REPORT_AT: Final = ", at commit {commit}"
REPORT_ON: Final = " on branch {branch}"
CRITERION_PASSED: Final = ": {passed} of {total} applications pass this criterion"
RATIONALE_MAX: Final = 1500
"""Characters of a criterion's rationale quoted in its own prompt (one line; the report's menu)."""
RATIONALE_BUDGET: Final = 900
"""Characters of rationale an alert's autorun prompt quotes, shared by its criteria (the prompt is
stored as a button's value, :data:`VALUE_MAX`)."""
REF_VALUE_MAX: Final = 150
"""Characters at most of a select menu option's value (Slack doc "Option object": ``value`` 150)."""
REF_DIGEST: Final = 16
PLAIN_ID: Final = re.compile(r"[A-Za-z0-9_.:/@+=-]+")
"""The ids a :class:`CriterionRef` carries as they are (anything else: by digest, or no option)."""
"""Hex characters of the SHA-256 of a criterion id that a reference carries when the id is too long."""


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


def computer_ask(computer_id: str, name: str | None, step: str | None, error: str | None, since: dt.datetime | None = None) -> Ask:
    """The ask of a computer in error: ``Computer ci-2 failed at step `Install dependencies`: find
    out why and fix it.`` and the step's error on a line of its own; with ``since`` (an incident's
    autorun: the alert's facts go in its words), when it went into error (UTC) and the computer's id
    (:data:`COMPUTER_SINCE`); on that computer."""
    said = _one_line(name or computer_id, 100)
    prompt = (
        COMPUTER_FAILED.format(name=said, step=_one_line(step, 100).replace("`", "'"))
        if step
        else COMPUTER_FAILED_NO_STEP.format(name=said)
    )
    if error and error.strip():
        prompt += "\n" + COMPUTER_ERROR.format(error=_one_line(error, ERROR_MAX))
    if since is not None:
        prompt += "\n" + COMPUTER_SINCE.format(since=_utc(since), id=_one_line(computer_id, 100).replace("`", "'"))
    return Ask(prompt, computer_id)


def _named(criterion: str, words: Callable[[str], str]) -> tuple[str, str]:
    """A criterion's id as kept in code (one line, backticks as ``'``) and its words where they say more than it ("" else)."""
    key = _one_line(criterion, 100).replace("`", "'")
    said = _one_line(words(criterion), 100)
    return key, ("" if said.lower() == key.lower() or not said else said)


def _make_pass(repo: str, criterion: str, words: Callable[[str], str]) -> str:
    """``Make criterion `lint_config` (Lint config) pass in acme/web.``"""
    key, said = _named(criterion, words)
    where = _one_line(repo, 200)
    return CRITERION_ONE.format(key=key, words=said, repo=where) if said else CRITERION_ONE_PLAIN.format(key=key, repo=where)


def criteria_ask(repo: str, criteria: Sequence[str], words: Callable[[str], str]) -> Ask | None:
    """The ask of failing readiness criteria of ``repo`` (their ids; ``words`` says an id in words,
    :func:`formatters.reports.criterion_words`): ``Make criterion `lint_config` (Lint config) pass in
    acme/web.``; several: each named so (at most :data:`CRITERIA_NAMED`, then counted). The id is
    kept, in code, as the key an operator types; the words only where they say more than it. None
    without criteria."""
    if not criteria:
        return None

    if len(criteria) == 1:
        return Ask(_make_pass(repo, criteria[0], words))
    named = (_named(criterion, words) for criterion in criteria[:CRITERIA_NAMED])
    names = ", ".join(f"`{key}` ({said})" if said else f"`{key}`" for key, said in named)
    if len(criteria) > CRITERIA_NAMED:
        names += CRITERIA_MORE.format(n=len(criteria) - CRITERIA_NAMED)
    return Ask(CRITERIA_MANY.format(repo=_one_line(repo, 200), names=names))


@dataclass(frozen=True)
class CriterionRef:
    """One criterion of one readiness report, by reference: the value of an option of the report's
    *Ask the agent about one criterion* menu (:func:`formatters.reports.criterion_menu`). An option's
    value holds at most :data:`REF_VALUE_MAX` characters, too few for a rationale, so the click's
    handler reads the report again (``report_id``) and finds the criterion: ``key`` is its id, or
    ``#`` and the first :data:`REF_DIGEST` hex characters of its id's SHA-256 when the id is too long
    or not plain (:data:`PLAIN_ID`: an API's ``<!channel>`` never travels in a payload). A report id
    that is not plain gets no option (:meth:`encode` is None)."""

    report_id: str
    key: str

    @classmethod
    def of(cls, report_id: str, criterion_id: str) -> CriterionRef:
        """The reference of ``criterion_id`` in ``report_id``: by id when that fits an option's value, else by digest."""
        ref = cls(report_id, criterion_id)
        if PLAIN_ID.fullmatch(criterion_id) and len(ref._json()) <= REF_VALUE_MAX:
            return ref
        return cls(report_id, "#" + hashlib.sha256(criterion_id.encode()).hexdigest()[:REF_DIGEST])

    def _json(self) -> str:
        return json.dumps({"r": self.report_id, "k": self.key}, ensure_ascii=False, separators=(",", ":"))

    def encode(self) -> str | None:
        """JSON ``{"r": report id, "k": key}`` of at most :data:`REF_VALUE_MAX` characters; None when
        even the digest does not fit (a report id longer than about 120 characters: no option)."""
        text = self._json()
        return text if len(text) <= REF_VALUE_MAX and PLAIN_ID.fullmatch(self.report_id) else None

    @classmethod
    def decode(cls, value: str) -> CriterionRef | None:
        """The :class:`CriterionRef` :meth:`encode` made; None for anything else (an :class:`Ask`'s
        value, a stale or forged one)."""
        try:
            data = json.loads(value)
        except ValueError:
            return None
        if not isinstance(data, dict) or set(data) != {"r", "k"}:
            return None
        report, key = data["r"], data["k"]
        if not (isinstance(report, str) and report.strip() and isinstance(key, str) and key.strip()):
            return None
        return cls(report, key)

    def names(self, criterion_id: str) -> bool:
        """Whether ``criterion_id`` is the criterion this reference names (by id, or by digest when ``key`` starts with ``#``)."""
        if self.key.startswith("#"):
            return "#" + hashlib.sha256(criterion_id.encode()).hexdigest()[:REF_DIGEST] == self.key
        return criterion_id == self.key


def _utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def with_report_facts(ask: Ask, report: Report, criteria: Sequence[Criterion], *, budget: int = RATIONALE_BUDGET) -> Ask:
    """``ask`` (:func:`criteria_ask` of ``criteria``, failing in ``report``) with what a person reads
    in the report besides their names: why they fail, in the report's words (each rationale on one
    line; the first :data:`CRITERIA_NAMED`, sharing ``budget`` characters), and where that was found
    (:data:`REPORT_FROM`: the report's id, when it was evaluated, in UTC, its commit and branch; for
    one criterion, how many applications pass it). ``ask`` unchanged without criteria."""
    if not criteria:
        return ask
    lines = [ask.prompt]
    if len(criteria) == 1:
        rationale = _one_line(criteria[0].rationale, budget)
        lines.append(CRITERION_WHY.format(rationale=rationale) if rationale else CRITERION_NO_WHY)
    else:
        lines.append(CRITERIA_WHY)
        each = max(budget // min(len(criteria), CRITERIA_NAMED), 60)
        for criterion in criteria[:CRITERIA_NAMED]:
            key = _one_line(criterion.id, 100).replace("`", "'")
            lines.append(CRITERIA_WHY_ONE.format(key=key, rationale=_one_line(criterion.rationale, each) or CRITERIA_NO_WHY))
    where = REPORT_AT.format(commit=_one_line(report.commit_hash, 40)) if report.commit_hash else ""
    if report.branch:
        where += REPORT_ON.format(branch=_one_line(report.branch, 100))
    found = REPORT_FROM.format(report=_one_line(report.report_id, 100), when=_utc(report.created_at), where=where)
    if len(criteria) == 1:
        found += CRITERION_PASSED.format(passed=f"{criteria[0].numerator:g}", total=f"{criteria[0].denominator:g}")
    lines.append(found + ".")
    return Ask("\n".join(lines), ask.computer_id)


def criterion_ask(report: Report, criterion: Criterion, words: Callable[[str], str]) -> Ask:
    """The ask of one failing criterion of ``report`` (its *Ask the agent about one criterion* menu):
    ``Make criterion `lint_config` (Lint config) pass in acme/web.`` (:func:`criteria_ask`), then why
    it fails (its rationale, one line, at most :data:`RATIONALE_MAX` characters), then where that was
    found: the report's id, when it was evaluated (UTC), its commit and branch, and how many
    applications pass the criterion (:func:`with_report_facts`). The API gives no description of a
    criterion: its words (``words``, :func:`formatters.reports.criterion_words`) are what says what it checks."""
    return with_report_facts(Ask(_make_pass(report.repository.slug, criterion.id, words)), report, [criterion], budget=RATIONALE_MAX)
