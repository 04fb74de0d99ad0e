"""Client-side checks of every argument, run before any request is sent.

Each function returns the normalised value or raises `AgentAPIValidationError` (a ValueError)
whose message starts with the parameter's name, e.g. "start_date: ...". They never raise
anything else, whatever they are given: that is what the hypothesis tests check.

Rules come from the "Limits" sections of both spec documents:
- analytics dates are `YYYY-MM-DD` strings or `date` objects (not datetimes), UTC, from
  2026-01-14 up to yesterday (today's data is not available yet), and start <= end;
- `limit` is 1-100 for `/users` and the v0 lists; the readiness `limit` is any positive integer;
- `group_by` takes only the one value its endpoint allows; message `role` is user/assistant/tool;
- credit-limit entries: 1 or more (the client batches by 100), a valid e-mail and an integer limit
  (the allowed range of a limit is not shown, so any integer is sent and the server's per-user
  `errors` report a refusal); the same e-mail twice is refused as ambiguous;
- `cwd` has length 1-4096; ids are non-empty strings; cursors are non-empty strings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from typing import Any, TypeVar

import pydantic

from bot.api.errors import AgentAPIValidationError
from bot.api.models import CreditLimitEntry, SessionSettings

EARLIEST_ANALYTICS_DATE = date(2026, 1, 14)
MAX_PAGE_LIMIT = 100
MAX_LIMIT_ENTRIES = 100
MAX_CWD_LENGTH = 4096
MAX_EMAIL_LENGTH = 254

_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# WHATWG's "valid e-mail address", ASCII only (JSON Schema "email"), with a dotted domain.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL_RE = re.compile(rf"[A-Za-z0-9.!#$%&'*+/=?^_`{{|}}~-]{{1,64}}@{_LABEL}(?:\.{_LABEL})+")

T = TypeVar("T")
ModelT = TypeVar("ModelT", bound=pydantic.BaseModel)


def _show(value: Any) -> str:
    """A short, printable description of a rejected value."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(name: str, problem: str) -> AgentAPIValidationError:
    return AgentAPIValidationError(name, problem)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def string(value: Any, *, name: str, allow_empty: bool = False) -> str:
    """A str that can be sent as UTF-8; non-blank unless `allow_empty`."""
    if not isinstance(value, str):
        raise _fail(name, f"expected a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(name, "contains characters that cannot be encoded as UTF-8") from None
    if not allow_empty and not value.strip():
        raise _fail(name, "must not be empty")
    return value


def optional(check: Callable[..., T], value: Any, **kwargs: Any) -> T | None:
    """Run `check` unless `value` is None."""
    return None if value is None else check(value, **kwargs)


def identifier(value: Any, *, name: str) -> str:
    """A non-empty id; "." and ".." are refused because ids become path segments."""
    text = string(value, name=name)
    if text in (".", ".."):
        raise _fail(name, f"{_show(text)} is not a valid id")
    return text


def cursor(value: Any, *, name: str = "cursor") -> str:
    """A pagination cursor: a non-empty string as returned by the server."""
    return string(value, name=name)


def choice(value: Any, *, name: str, allowed: Sequence[str]) -> str:
    """One of `allowed` (group_by, role)."""
    if isinstance(value, str) and value in allowed:
        return value
    options = ", ".join(repr(a) for a in allowed)
    raise _fail(name, f"must be one of {options}, got {_show(value)}")


def integer(value: Any, *, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """An int (bool, float and str refused) within [minimum, maximum]."""
    if not _is_int(value):
        raise _fail(name, f"expected an integer, got {type(value).__name__} {_show(value)}")
    number = int(value)
    if minimum is not None and maximum is not None:
        span = f"between {minimum} and {maximum}"
    else:
        span = f">= {minimum}" if minimum is not None else f"<= {maximum}"
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise _fail(name, f"must be {span}, got {number}")
    return number


def page_limit(value: Any, *, name: str = "limit") -> int:
    """A page size of the analytics `/users` and v0 lists: 1-100."""
    return integer(value, name=name, minimum=1, maximum=MAX_PAGE_LIMIT)


def positive_int(value: Any, *, name: str) -> int:
    """A positive integer (readiness `limit`, `max_pages`)."""
    return integer(value, name=name, minimum=1)


def analytics_date(value: Any, *, name: str, today: date) -> date:
    """A day with analytics data: `date` or "YYYY-MM-DD", from 2026-01-14 to yesterday (UTC)."""
    if isinstance(value, datetime) or not isinstance(value, (date, str)):
        raise _fail(name, f"expected a date or a 'YYYY-MM-DD' string, got {type(value).__name__}")
    day: date
    if isinstance(value, str):
        if not _DATE_RE.fullmatch(value):
            raise _fail(name, f"expected 'YYYY-MM-DD', got {_show(value)}")
        try:
            day = date.fromisoformat(value)
        except ValueError:
            raise _fail(name, f"{_show(value)} is not a calendar date") from None
    else:
        day = value
    if day < EARLIEST_ANALYTICS_DATE:
        raise _fail(name, f"{day} is before {EARLIEST_ANALYTICS_DATE}, the earliest day with analytics")
    if day >= today:
        raise _fail(
            name,
            f"{day} is today or later (UTC); analytics cover days up to yesterday, as data lands the day after",
        )
    return day


def analytics_range(start: Any, end: Any, *, today: date) -> tuple[date, date]:
    """Checked (start_date, end_date) with start <= end."""
    start_date = analytics_date(start, name="start_date", today=today)
    end_date = analytics_date(end, name="end_date", today=today)
    if start_date > end_date:
        raise _fail("start_date", f"{start_date} is after end_date {end_date}")
    return start_date, end_date


def cwd(value: Any, *, name: str = "cwd") -> str:
    """A working directory of 1-4096 characters."""
    path = string(value, name=name, allow_empty=True)
    if not 1 <= len(path) <= MAX_CWD_LENGTH:
        raise _fail(name, f"length must be 1-{MAX_CWD_LENGTH}, got {len(path)}")
    return path


def email(value: Any, *, name: str) -> str:
    """An e-mail address (ASCII, `local@domain.tld`, at most 254 characters)."""
    address = string(value, name=name)
    if len(address) > MAX_EMAIL_LENGTH or not _EMAIL_RE.fullmatch(address):
        raise _fail(name, f"{_show(address)} is not a valid e-mail address")
    return address


def _sequence(value: Any, *, name: str) -> list[Any]:
    """A list, tuple or other non-string sequence, copied to a list."""
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Sequence):
        raise _fail(name, f"expected a list, got {type(value).__name__}")
    return list(value)


def _pydantic_problem(name: str, exc: pydantic.ValidationError) -> AgentAPIValidationError:
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"])
    return _fail(f"{name}.{where}" if where else name, first["msg"])


def model_input(value: Any, model: type[ModelT], *, name: str) -> ModelT:
    """An instance of `model`, or a mapping with string keys validated into one."""
    if isinstance(value, model):
        return value
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _fail(name, f"expected {model.__name__} or a dict, got {type(value).__name__}")
    try:
        return model.model_validate(dict(value))
    except pydantic.ValidationError as exc:
        raise _pydantic_problem(name, exc) from None


def session_settings(value: Any, *, name: str = "session_settings") -> SessionSettings:
    """A `SessionSettings` or a dict of its members (snake_case or camelCase names)."""
    return model_input(value, SessionSettings, name=name)


def attachments(value: Any, model: type[pydantic.BaseModel], *, name: str) -> list[dict[str, Any]]:
    """A list of attachments (models or dicts), returned in wire form."""
    items = _sequence(value, name=name)
    return [
        model_input(item, model, name=f"{name}[{i}]").model_dump(mode="json", by_alias=True, exclude_none=True)
        for i, item in enumerate(items)
    ]


def _entry_parts(item: Any, name: str) -> tuple[Any, Any]:
    if isinstance(item, CreditLimitEntry):
        return item.email, item.limit
    if isinstance(item, Mapping):
        if "email" not in item or "limit" not in item:
            raise _fail(name, "a dict entry needs the keys 'email' and 'limit'")
        return item["email"], item["limit"]
    if isinstance(item, tuple) and len(item) == 2:
        return item
    raise _fail(name, f"expected CreditLimitEntry, (email, limit) or a dict, got {_show(item)}")


def credit_limit_entries(value: Any, *, name: str = "entries") -> list[CreditLimitEntry]:
    """Checked credit-limit entries: at least one, valid e-mails, integer limits, no duplicates."""
    items = _sequence(value, name=name)
    if not items:
        raise _fail(name, "needs at least one entry")
    entries: list[CreditLimitEntry] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        raw_email, raw_limit = _entry_parts(item, f"{name}[{i}]")
        address = email(raw_email, name=f"{name}[{i}].email")
        limit = integer(raw_limit, name=f"{name}[{i}].limit")
        key = address.casefold()
        if key in seen:
            raise _fail(f"{name}[{i}].email", f"{address} is already in {name}[{seen[key]}]")
        seen[key] = i
        entries.append(CreditLimitEntry(email=address, limit=limit))
    return entries
