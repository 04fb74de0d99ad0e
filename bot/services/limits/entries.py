"""Reading the entries of a credit-limit request: users and credits typed in a command or pasted as CSV.

A user is an e-mail or a Slack ``<@U…>`` mention (its e-mail through :class:`bot.identity.Identity`,
``users.info``); each must be an organization user of the Agent platform
(``GET /api/v0/organization/users``, walked to the end); credits are whole numbers from 0 to
:data:`CREDITS_MAX` (management-api-v0.md does not show the allowed range of a limit: "not shown",
so the bot refuses only what cannot be meant); no user twice. Every problem is named at once, in
the order of the input, the organization check last (one walk of the users for the whole request).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from typing import Final

from bot.api import AgentClient
from bot.commands import in_code
from bot.identity import Identity, mentioned_user
from bot.services.limits.store import LimitEntry

CREDITS_MAX: Final = 10**12
"""The largest limit accepted, in credits (a typo guard; the API's own range is not shown)."""
CREDITS: Final = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+|[0-9]{1,3}(?:_[0-9]{3})+|[0-9]+", re.ASCII)
"""A whole number, optionally grouped by thousands with ``,`` or ``_`` (``1,000``, ``1_000``)."""

NO_ENTRIES: Final = "Name at least one user and a credit limit."
NO_CREDITS: Final = "`{user}` has no credits after it."
BAD_USER: Final = "`{user}` is neither an e-mail nor an @mention."
UNKNOWN_MENTION: Final = "I cannot find the e-mail of {user} in Slack."
CREDITS_RANGE: Final = f"a whole number from 0 to {CREDITS_MAX:,}"
BAD_CREDITS: Final = "`{user}`: credits must be " + CREDITS_RANGE + ", not `{value}`."
CREDITS_TOO_LARGE: Final = "`{user}`: `{value}` credits is more than a limit can be: give " + CREDITS_RANGE + "."
NOT_ORG_USER: Final = "`{email}` is not an organization user of the Agent platform."
TWICE: Final = "`{email}` appears more than once."
CSV_LINE: Final = "line {n}: expected `email,limit`, got `{text}`"
CSV_HEADER: Final = ("email", "limit")
CSV_ECHO_CHARS: Final = 80
"""How much of a bad CSV line :data:`CSV_LINE` repeats."""


def parse_credits(value: str) -> int | None:
    """``"5000"``, ``"1,000"`` or ``"1_000"`` -> credits; ``None`` for anything else (a sign, a
    decimal, ``"1,5"``, a number above :data:`CREDITS_MAX`)."""
    if not CREDITS.fullmatch(value):
        return None
    credits = int(value.replace(",", "").replace("_", ""))
    return credits if credits <= CREDITS_MAX else None


def credits_too_large(value: str) -> bool:
    """True when ``value`` is written as credits but is above :data:`CREDITS_MAX`."""
    return bool(CREDITS.fullmatch(value)) and parse_credits(value) is None


def user_problem(token: str) -> str:
    """Why ``token`` names nobody: an unknown mention (Slack gave no e-mail) or not a user at all."""
    return UNKNOWN_MENTION.format(user=token) if mentioned_user(token) else BAD_USER.format(user=in_code(token))


async def check_entries(pairs: Sequence[tuple[str, str]], *, identity: Identity, agent: AgentClient) -> tuple[list[LimitEntry], list[str]]:
    """``(user token, credits text)`` pairs -> ``(entries, problems)``.

    ``entries`` are the pairs that read well, e-mails lower-cased, in order; ``problems`` names every
    bad pair (:data:`BAD_USER`, :data:`UNKNOWN_MENTION`, :data:`BAD_CREDITS`, :data:`CREDITS_TOO_LARGE`, :data:`TWICE`) and
    every e-mail that is not an organization user (:data:`NOT_ORG_USER`). Nothing may be filed
    unless ``problems`` is empty. Raises :class:`bot.api.AgentAPIError` when the organization users
    cannot be read."""
    entries: list[LimitEntry] = []
    problems: list[str] = []
    seen: set[str] = set()
    for user, value in pairs:
        email = await identity.email_of_token(user)
        if email is None:
            problems.append(user_problem(user))
        limit = parse_credits(value)
        if limit is None:
            too_large = CREDITS_TOO_LARGE if credits_too_large(value) else BAD_CREDITS
            problems.append(too_large.format(user=in_code(user), value=in_code(value)))
        if email is None or limit is None:
            continue
        if email in seen:
            problems.append(TWICE.format(email=email))
            continue
        seen.add(email)
        entries.append(LimitEntry(email, limit))
    if entries:
        organization = {u.email.lower() async for u in agent.iter_organization_users() if u.email}
        problems.extend(NOT_ORG_USER.format(email=e.email) for e in entries if e.email not in organization)
    return entries, problems


def parse_csv(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """``email,limit`` lines -> ``(pairs, problems)``: cells stripped, blank lines and a header
    ``email,limit`` (any case) skipped, quoted cells read as CSV does; a line without exactly two
    cells is a problem naming its line number (:data:`CSV_LINE`)."""
    pairs: list[tuple[str, str]] = []
    problems: list[str] = []
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)  # `a, "1,000"` is two cells
    line = 0  # the last physical line read; a quoted cell may span several
    while True:
        start = line + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error:  # a cell beyond the csv module's field size limit
            problems.append(CSV_LINE.format(n=start, text="(unreadable)"))
            break
        line = reader.line_num
        cells = [c.strip() for c in row]
        if not any(cells) or tuple(c.lower() for c in cells) == CSV_HEADER:
            continue
        if len(cells) != 2:
            problems.append(CSV_LINE.format(n=start, text=",".join(cells)[:CSV_ECHO_CHARS]))
            continue
        pairs.append((cells[0], cells[1]))
    return pairs, problems
