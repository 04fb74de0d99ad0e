"""Logging set-up with secret redaction.

:func:`configure_logging` installs one stream handler whose :class:`RedactingFilter` replaces every
configured secret value (API key, bot token, signing secret, app token) and anything shaped like a
Slack token (``xoxb-``, ``xapp-``, rotating ``xoxe.xoxb-`` and refresh ``xoxe-``...) or a bearer
credential with ``[redacted]``, in the message and
in the formatted arguments and traceback, so that no secret reaches a log line even by accident.

The same filter neutralizes the message (API values are logged as arguments): line breaks, other
control characters (terminal escapes) and the invisible formatting characters of
:data:`INVISIBLE` (bidirectional overrides, zero-width characters) become visible escapes
(``\\n``, ``\\x1b``, ``\\u202e``), so that a value can neither forge a log line nor hide or
reorder text in a terminal. A traceback keeps its line breaks (its values are redacted).

Every line carries the id of the Slack request it belongs to (:data:`request_id`, a context variable
that follows the request into its listener's task): ``... bot.services.follower [3f9a0c1d2e]: ...``.

Two formats (``AGENT_BOT_LOG_FORMAT``): ``text`` (:data:`LOG_FORMAT`) and ``json`` (:class:`JsonFormatter`:
one JSON object a line, ``{"time", "level", "logger", "request_id", "message"}`` and ``"exception"``
with a traceback), for log shippers. Both go through the same redaction and neutralization.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import re
from collections.abc import Iterable
from typing import Final, Literal

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
"""The id of the Slack request being handled (set by :func:`bot.middleware.tag_request`); every log
line of that request carries it, and an apology shows it as its reference."""
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"
LogFormat = Literal["text", "json"]
LOG_FORMATS: Final = ("text", "json")


class RequestIdFilter(logging.Filter):
    """Adds ``record.request_id`` (``-`` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get() or "-"
        return True


_TOKENISH = re.compile(r"\b(xox[abeprs][.-][A-Za-z0-9.-]+|xapp-[A-Za-z0-9-]+)|(Bearer\s+)[^\s'\"]+")
REDACTED = "[redacted]"
INVISIBLE = "\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
"""Invisible format characters, as the body of a regex character class: Arabic letter mark,
zero-width space/joiners, LRM/RLM, line and paragraph separators, bidi embeddings, overrides and
isolates, word joiner, BOM, interlinear annotations."""
_UNSAFE = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{INVISIBLE}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def neutralize(text: str) -> str:
    """``text`` with line breaks, control and invisible characters as visible escapes (one line)."""
    return _UNSAFE.sub(lambda m: _NAMED.get(m.group(), m.group().encode("unicode_escape").decode("ascii")), text)


class RedactingFilter(logging.Filter):
    """Rewrites a record's text so that none of ``secrets`` (nor Slack-token-shaped strings) remains."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return _TOKENISH.sub(lambda m: (m.group(2) or "") + REDACTED, text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg, record.args = neutralize(self.redact(message)), None
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (ISO 8601, UTC, milliseconds), ``level``, ``logger``,
    ``request_id`` (``-`` outside a request), ``message``, and ``exception`` (the traceback, its line
    breaks escaped by JSON) when there is one. Expects the record already through
    :class:`RequestIdFilter` and :class:`RedactingFilter` (handler filters run before formatting)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "request_id": getattr(record, "request_id", "-"),
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str = "INFO", secrets: Iterable[str] = (), log_format: LogFormat = "text") -> RedactingFilter:
    """Log to stderr at ``level`` through a :class:`RedactingFilter`, as text (:data:`LOG_FORMAT`) or
    JSON lines (:class:`JsonFormatter`); returns the filter."""
    redactor = RedactingFilter(secrets)
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(LOG_FORMAT))
    handler.addFilter(RequestIdFilter())
    handler.addFilter(redactor)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # APScheduler says "Running job ..." and "... executed successfully" at INFO for every tick
    # (the session follower ticks every second): routine, so DEBUG. A failed job is logged by
    # bot.scheduler at ERROR with its trace, a missed one by APScheduler at WARNING.
    quiet = logging.NOTSET if root.level <= logging.DEBUG else logging.WARNING
    for name in ("apscheduler.executors", "apscheduler.scheduler"):
        logging.getLogger(name).setLevel(quiet)
    return redactor
