"""Logging set-up with secret redaction.

:func:`configure_logging` installs one stream handler whose :class:`RedactingFilter` replaces every
configured secret value (API key, bot token, signing secret, app token) and anything shaped like a
Slack token (``xoxb-``, ``xapp-``...) or a bearer credential with ``[redacted]``, in the message and
in the formatted arguments and traceback, so that no secret reaches a log line even by accident.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

_TOKENISH = re.compile(r"\b(xox[abprs]-[A-Za-z0-9-]+|xapp-[A-Za-z0-9-]+)|(Bearer\s+)[^\s'\"]+")
REDACTED = "[redacted]"


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
        record.msg, record.args = self.redact(message), None
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True


def configure_logging(level: str = "INFO", secrets: Iterable[str] = ()) -> RedactingFilter:
    """Log to stderr at ``level`` through a :class:`RedactingFilter`; returns the filter."""
    redactor = RedactingFilter(secrets)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(redactor)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    return redactor
