"""The sessions services speak the shared vocabulary (bot.outcomes) and import no formatters or
handlers: what they post comes from the SessionMessages / HookMessages handed in at wiring."""

from __future__ import annotations

import ast
import pathlib

import pytest

from bot.outcomes import Declined, NotFound, Refused
from bot.services.sessions import ACTION_WORDS, ARCHIVED_REASON, NOT_ALLOWED_REASON, NoSuchSession, NotAllowed, SessionArchived
from bot.services.sessions.messages import SessionMessages
from formatters import sessions as session_messages

ROOT = pathlib.Path(__file__).resolve().parents[4]
SERVICES = [*sorted((ROOT / "bot/services/sessions").glob("*.py")), ROOT / "bot/services/hooks.py"]


@pytest.mark.parametrize("path", SERVICES, ids=lambda p: p.name)
def test_a_sessions_service_module_imports_no_formatters_or_handlers(path: pathlib.Path) -> None:
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    assert not {name for name in imported if name.split(".")[0] in ("formatters", "handlers")}


def test_formatters_sessions_is_the_messages_the_services_are_handed() -> None:
    messages: SessionMessages = session_messages  # mypy checks the module against the Protocol in bot/app.py
    assert callable(messages.parent_message) and callable(messages.one_line)


def test_a_refusal_on_someone_elses_session_is_a_refused_naming_the_starter() -> None:
    refusal = NotAllowed("archive", "U0OWNER")
    assert isinstance(refusal, Declined)
    assert refusal.outcome == Refused(ACTION_WORDS["archive"], NOT_ALLOWED_REASON, needs="manager", who_can_help=("U0OWNER",))
    assert NotAllowed("set", None).outcome == Refused(ACTION_WORDS["set"], NOT_ALLOWED_REASON, needs="manager")
    assert SessionArchived().outcome == Refused(ACTION_WORDS["reply"], ARCHIVED_REASON)


def test_an_unknown_session_is_a_not_found() -> None:
    missing = NoSuchSession("3f2a", "look here")
    assert missing.outcome == missing.found == NotFound("session", "3f2a", "look here")
