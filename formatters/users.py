"""Block Kit for ``/agent users [query]``: a screen of organization users with a "More" button.

Input: :class:`bot.services.org_users.UsersScreen` (users are :class:`bot.api.OrganizationUser`) and
``today`` (a UTC date, for the age of a sign-in). Output: ``{"text", "blocks"}`` (see
:func:`formatters.blocks.message`): a header, one section per user (name, e-mail, last sign-in as
date and age or "never", join date), a context line saying where in the list this screen is, and an
actions block with the ``users.more`` button while more users may exist, for a viewer who may press
it. At most :data:`bot.services.org_users.SCREEN` users, so a screen stays well under 50 blocks.

``createdAt``/``lastSignInAt`` are strings (management-api-v0.md, "Organization user"); an ISO 8601
value is shown as a UTC date, anything else (a leap second, a moment that is past year 9999 or
before year 1 in UTC) as sent (escaped, cut): one odd value degrades its own line, never the reply.
"""

from __future__ import annotations

import datetime as dt

from bot.api.models import OrganizationUser
from bot.services.org_users import UsersScreen, encode_more
from formatters.blocks import Payload, actions, button, context, cut, esc, header, message, section
from formatters.notices import ROLE_HOLDERS

MORE_ACTION = "users.more"
MORE_LABEL = "More"
TITLE = "Organization users"
TITLE_QUERY = "Organization users matching \u201c{query}\u201d"
NO_USERS = "The organization has no users."
NO_MATCH = "No organization user matches `{query}` (first name, last name or e-mail)."
NO_MATCH_HINT = "Try part of a name or an e-mail, or `/agent users` for everyone."
NO_MORE = "No more users after the first {count}."
NEVER = "never"
POSITION = "{label} {first}\u2013{last}"
COUNT = "{total} {noun}."
END = "End of the list: {total} {noun} in all."
MORE_NOTE = "Press *More* for the next ones."
BOUNDED = "Looked through {scanned} users for this screen without filling it; press *More* to keep searching."
TOO_LONG = "More users exist, but the position does not fit in a button; narrow the query."
MORE_WHO = "More users exist; only {holders} can page further."
NAME_MAX = 150
EMAIL_MAX = 254


def _moment(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(value)
        return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)
    except (ValueError, OverflowError):  # not ISO 8601, a leap second, or past year 9999 in UTC
        return None


def age(days: int) -> str:
    """``days`` before today in words: ``today``, ``yesterday``, ``5 days ago``, ``3 months ago``."""
    if days < 0:
        return "in the future"
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    if days < 60:
        return f"{days} days ago"
    if days < 730:
        return f"{days // 30} months ago"
    return f"{days // 365} years ago"


def sign_in(value: str | None, today: dt.date) -> str:
    """A ``lastSignInAt`` string as ``2026-11-20 (2 days ago)``; ``never`` when absent."""
    if not value:
        return NEVER
    moment = _moment(value)
    if moment is None:
        return esc(cut(value, 40))
    return f"{moment.date().isoformat()} ({age((today - moment.date()).days)})"


def joined(value: str | None) -> str:
    """A ``createdAt`` string as a UTC date; ``n/a`` when absent."""
    if not value:
        return "n/a"
    moment = _moment(value)
    return moment.date().isoformat() if moment else esc(cut(value, 40))


def display_name(user: OrganizationUser) -> str:
    """First and last name (plain, unescaped); ``(no name)`` when both are missing."""
    return " ".join(part for part in (user.first_name, user.last_name) if part) or "(no name)"


def _user_section(user: OrganizationUser, today: dt.date) -> object:
    name = esc(cut(display_name(user), NAME_MAX))
    email = esc(cut(user.email or "", EMAIL_MAX))
    return section(f"*{name}*  {email}\nLast sign-in: {sign_in(user.last_sign_in_at, today)} \u00b7 Joined: {joined(user.created_at)}")


def users_screen(screen: UsersScreen, today: dt.date, *, may_page: bool = True, page_role: str = "manager") -> Payload:
    """The reply to ``/agent users [query]`` and to each ``users.more`` click (ephemeral: one
    viewer). ``may_page``: whether the viewer may press More (the policy's answer for
    :data:`MORE_ACTION`); when not, there is no button and the note says who may
    (:data:`MORE_WHO`, ``page_role`` the role name that key needs)."""
    query = screen.query
    title = TITLE_QUERY.format(query=cut(query, 100)) if query else TITLE
    if not screen.users and screen.start == 0 and screen.next is None:
        text = NO_MATCH.format(query=esc(query)) if query else NO_USERS
        blocks: list = [header(title), section(text)]
        if query:
            blocks.append(context(NO_MATCH_HINT))
        return message(blocks, f"{esc(title)}: {text}")
    blocks = [header(title)]
    blocks += [_user_section(user, today) for user in screen.users]
    shown = screen.start + len(screen.users)
    noun = ("match" if shown == 1 else "matches") if query else ("user" if shown == 1 else "users")
    value = encode_more(screen.next) if screen.next and may_page else None
    notes: list[str] = []
    if screen.next is None and screen.start == 0:
        notes.append(COUNT.format(total=shown, noun=noun))
    else:
        if screen.users:
            label = "Matches" if query else "Users"
            notes.append(POSITION.format(label=label, first=screen.start + 1, last=shown))
        else:
            notes.append(NO_MORE.format(count=screen.start))
        if screen.next is None:
            notes.append(END.format(total=shown, noun=noun))
    if screen.next is not None:
        if not may_page:
            notes.append(MORE_WHO.format(holders=ROLE_HOLDERS.get(page_role, page_role)))
        elif value is None:
            notes.append(TOO_LONG)
        elif screen.bounded:
            notes.append(BOUNDED.format(scanned=screen.scanned))
        else:
            notes.append(MORE_NOTE)
    blocks.append(context(" \u00b7 ".join(notes)))
    if value is not None:
        blocks.append(actions(button(MORE_LABEL, MORE_ACTION, value), block_id="users_more"))
    if screen.users:
        names = ", ".join(display_name(u) for u in screen.users[:5])
        extra = len(screen.users) - 5
        summary = names + (f" and {extra} more" if extra > 0 else "")
    else:
        summary = NO_MORE.format(count=screen.start)
    return message(blocks, esc(f"{title}: {summary}"))
