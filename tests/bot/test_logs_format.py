"""``AGENT_BOT_LOG_FORMAT`` (bot/logs.py): text and JSON lines, both redacted and neutralized."""

from __future__ import annotations

import datetime as dt
import json
import logging

import pytest

from bot.config import Settings
from bot.logs import LOG_FORMAT, REDACTED, configure_logging, request_id

SECRET = "sk-live-0123456789"
NEUTRALIZED = "user said hi\\n2026-11-22 00:00:00 INFO bot.app [-]: forged line"
"""FORGED as logged: its line break a visible escape, so it cannot start a line of its own."""
FORGED = "user said hi\n2026-11-22 00:00:00 INFO bot.app [-]: forged line"
CREATED = dt.datetime(2026, 11, 22, tzinfo=dt.UTC).timestamp() + 0.25


@pytest.fixture
def restore_root():
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def emit(log_format, capsys, *, exc: bool = False) -> tuple[list[str], logging.LogRecord]:
    """Log one record with a secret and a forged line break through the configured handler; the lines written."""
    configure_logging("INFO", [SECRET], log_format)
    exc_info = None
    if exc:
        try:
            raise RuntimeError(f"boom with {SECRET}\nand a second line")
        except RuntimeError:
            import sys

            exc_info = sys.exc_info()
    record = logging.LogRecord("bot.services.usage", logging.WARNING, __file__, 1, "key %s: %s", (SECRET, FORGED), exc_info)
    record.created, record.msecs = CREATED, 250.0
    token = request_id.set("3f9a0c1d2e")
    try:
        logging.getLogger().handle(record)
    finally:
        request_id.reset(token)
    return capsys.readouterr().err.splitlines(), record


def test_text_lines_are_redacted_and_neutralized(restore_root, capsys):
    lines, record = emit("text", capsys)
    asctime = logging.Formatter(LOG_FORMAT).formatTime(record)
    assert lines == [f"{asctime} WARNING bot.services.usage [3f9a0c1d2e]: key {REDACTED}: {NEUTRALIZED}"]


def test_json_lines_are_one_object_each_redacted_and_neutralized(restore_root, capsys):
    lines, _record = emit("json", capsys)
    assert len(lines) == 1
    assert json.loads(lines[0]) == {
        "time": "2026-11-22T00:00:00.250Z",
        "level": "WARNING",
        "logger": "bot.services.usage",
        "request_id": "3f9a0c1d2e",
        "message": f"key {REDACTED}: {NEUTRALIZED}",
    }


def test_json_traceback_stays_on_the_line_and_is_redacted(restore_root, capsys):
    lines, _record = emit("json", capsys, exc=True)
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert set(entry) == {"time", "level", "logger", "request_id", "message", "exception"}
    assert entry["exception"].splitlines()[0] == "Traceback (most recent call last):"
    assert entry["exception"].splitlines()[-2:] == [f"RuntimeError: boom with {REDACTED}", "and a second line"]
    assert SECRET not in lines[0]


def test_the_setting_takes_text_or_json_only(monkeypatch):
    monkeypatch.setenv("AGENT_BOT_LOG_FORMAT", "json")
    assert Settings().log_format == "json"
    monkeypatch.setenv("AGENT_BOT_LOG_FORMAT", "xml")
    with pytest.raises(ValueError, match=r"AGENT_BOT_LOG_FORMAT"):
        Settings()
