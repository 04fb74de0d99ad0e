"""docs/architecture.md stays true: every path its command map names exists, every ``/agent``
sub-command the bot registers has a line there, and every section the code cites is in it.

The sub-commands are read from the router of a bot built by the composition root
(:func:`bot.wiring.create_bot`, on a SQLite file and an Agent API URL nothing listens on: no network).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config import Settings
from bot.wiring import create_bot

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
CODE = ("bot", "handlers", "formatters", "sandbox", "docs")


def section(title: str) -> str:
    """The text of the ``## title`` section of docs/architecture.md (up to the next ``## ``)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert found, f"docs/architecture.md has no section {title!r}"
    return found.group(1)


def command_map() -> list[list[str]]:
    """The rows of the command map's table, each a list of its cells (the header and rule left out)."""
    rows = [line for line in section("Command map").splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def quoted(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_the_command_map_has_its_columns():
    rows = command_map()
    assert rows and all(len(row) == 5 for row in rows), "entry | handler | service | formatter | tests"


def test_every_path_in_the_command_map_exists():
    named = {path for row in command_map() for cell in row[1:] for path in quoted(cell) if "/" in path}
    assert named, "the map names no path"
    missing = sorted(path for path in named if not (ROOT / path.split("::")[0]).exists())
    assert missing == []


def test_every_test_path_in_the_command_map_is_a_test():
    for row in command_map():
        for path in quoted(row[4]):
            assert path.startswith("tests/"), path
            assert path.endswith("/") or Path(path).name.startswith("test_"), path


@pytest.fixture
def router(tmp_path):
    settings = Settings(
        _env_file=None,
        slack_bot_token="xoxb-test",
        slack_signing_secret="s",
        agent_api_url="http://127.0.0.1:9",
        agent_api_key="k",
        database_url=f"sqlite:///{tmp_path / 'bot.db'}",
    )
    bot = create_bot(settings)
    yield bot.router
    bot.services.store.close()


def test_every_registered_sub_command_has_a_line(router):
    entries = {name for row in command_map() for name in quoted(row[0])}
    registered = {spec.name for spec in router.specs}
    assert registered - entries == set(), "add these to docs/architecture.md's command map"
    assert {"usage", "session start", "whoami"} <= registered  # the router was read


def test_the_sections_the_code_cites_exist():
    cited = {
        title
        for package in CODE
        for path in (ROOT / package).rglob("*")
        if path.suffix in {".py", ".md"}
        for title in re.findall(r'docs/architecture\.md,\s+"([^"]+)"', path.read_text(encoding="utf-8"))
    }
    cited = {" ".join(title.split()) for title in cited}  # a title may be broken over two lines
    assert cited, "nothing cites docs/architecture.md by section"
    for title in cited:
        section(title)


DOC_POINTER = re.compile(r"\((README|docs/[\w-]+\.md), ([^()]+)\)")
"""A pointer of ``agent-bot doctor`` to a section: ``(docs/operations.md, Upgrading and the database)``."""


def headings(doc: Path) -> set[str]:
    """Every heading of a Markdown file (any level), outside fenced code."""
    text = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {match.strip() for match in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def test_every_pointer_of_the_doctor_names_a_heading_of_its_doc():
    import bot.doctor

    texts = [value for value in vars(bot.doctor).values() if isinstance(value, str)]
    texts.append((ROOT / "bot" / "doctor.py").read_text(encoding="utf-8"))
    pointers = {(doc, title) for text in texts for doc, title in DOC_POINTER.findall(text)}
    assert len(pointers) >= 4, pointers  # the roles file, computer rules, installing, upgrading
    missing = [(doc, title) for doc, title in sorted(pointers) if title not in headings(ROOT / ("README.md" if doc == "README" else doc))]
    assert missing == []


QUOTED_POINTER = re.compile(r'\b(README|docs/[\w-]+\.md)(?:,\s*|\s+\(\s*)"([^"]+)"')
"""A docstring's or a message's pointer to a section: ``(docs/architecture.md, "Outcomes")`` or
``docs/operations.md ("The analytics store")``; a title may be broken over lines."""


def test_every_pointer_to_a_section_in_the_code_names_a_heading_of_its_doc():
    pointers: set[tuple[str, str, str]] = set()
    for package in ("bot", "handlers", "formatters"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            unquoted = [(doc, title) for doc, title in DOC_POINTER.findall(text) if not title.startswith('"')]
            for doc, title in [*QUOTED_POINTER.findall(text), *unquoted]:
                pointers.add((str(path.relative_to(ROOT)), doc, " ".join(title.split())))
    assert len({(doc, title) for _, doc, title in pointers}) >= 8, pointers
    missing = [
        (where, doc, title)
        for where, doc, title in sorted(pointers)
        if title not in headings(ROOT / ("README.md" if doc == "README" else doc))
    ]
    assert missing == []
