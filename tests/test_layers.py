"""The layers of the house, read from the source with :mod:`ast` (nothing is imported).

- No module under ``bot/`` imports :mod:`formatters` or :mod:`handlers`, except :mod:`bot.wiring`,
  the composition root: data flows request -> handler -> services -> typed result -> formatter, so
  services hand back data and never format, and only the root knows every layer. Every import counts,
  at the top, inside a function or under ``if TYPE_CHECKING``.
- ``bot`` never imports :mod:`sandbox`, except the CLI and the demo (:data:`DEMO`): the stack wires
  the two together, the tour and the interactive prompt read what the Slack emulator recorded.
- Only the CLI runs the demo: no other module under ``bot/`` imports it.
- Tests run on the demo's stack (:mod:`bot.stack`), never on the tour or the interactive prompt,
  except the tests of those (:data:`DEMO_TESTS`).
- :mod:`formatters` imports no :mod:`handlers`, and none of ``bot.api``'s transport when it runs:
  of ``bot.api`` only its data (``bot.api.models``); the client, the package (which re-exports it)
  and ``httpx`` only under ``if TYPE_CHECKING``.
- :mod:`sandbox` imports none of ``bot``, ``handlers``, ``formatters``: it is an independent
  implementation of the spec, so the tests that run one against the other mean something.

:data:`KNOWN_VIOLATIONS` lists offenders being fixed (module -> what it imports; empty now); the test
asserts the list is exactly what it finds, so it fails on a new offender and on one fixed but still
listed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WIRING = "bot.wiring"
CLI = "bot.cli"
STACK = "bot.stack"
DEMO = {STACK, "bot.tour", "bot.interactive"}
"""The demo (``agent-bot demo``): the stack (sandbox Agent API, Slack emulator and bot on loopback, what
tests and benchmarks run on), the tour, and the interactive prompt with the web console."""
SANDBOX_WIRED_BY = {CLI, *DEMO}
DEMO_TESTS = {"tests.bot.test_tour", "tests.bot.test_tour_alerts", "tests.bot.test_interactive", "tests.bot.test_interactive_web"}
"""The tests that may import the tour and the interactive prompt: theirs (``test_tour`` runs ``agent-bot demo`` as a process)."""
FORMATTERS_MAY_RUN = {"bot.api.models"}
"""What of ``bot.api`` a formatter may import outside ``if TYPE_CHECKING``: the data, not the client."""
TRANSPORT = ("bot.api", "httpx")

KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()
"""``bot`` modules that still import :mod:`formatters` (module, imported module): none since issue #24
moved their formatting out to the handlers and :mod:`bot.wiring`; a new one fails the test."""


@dataclass(frozen=True)
class Import:
    """One import in ``module``: the ``imported`` module (``from a import b`` is ``a.b`` when ``b``
    is a module of the repository, else ``a``) and whether it runs (False under ``if TYPE_CHECKING``)."""

    module: str
    imported: str
    runs: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _absolute(module: str, node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(path: Path, source: str | None = None) -> Iterator[Import]:
    """Every import of the file at ``path`` (its text, or ``source``), wherever it is in the module."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source, filename=str(path))

    def walk(node: ast.AST, runs: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child.test):
                for stmt in child.body:
                    yield from walk_one(stmt, False)
                for stmt in child.orelse:
                    yield from walk_one(stmt, runs)
            else:
                yield from walk_one(child, runs)

    def walk_one(node: ast.AST, runs: bool) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, runs)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node, package)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                yield Import(module, sub if is_module(sub) else source, runs)
        else:
            yield from walk(node, runs)

    yield from walk(tree, True)


def imports_under(package: str) -> list[Import]:
    return [found for path in sorted((ROOT / package).rglob("*.py")) for found in imports_of(path)]


def within(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_bot_imports_formatters_and_handlers_only_in_the_composition_root():
    found = {(i.module, i.imported) for i in imports_under("bot") if within(i.imported, "formatters", "handlers") and i.module != WIRING}
    assert not {v for v in found if within(v[1], "handlers")}  # none known: handlers are the root's alone
    assert found - KNOWN_VIOLATIONS == set(), "a new import of formatters or handlers under bot/: move it to bot.wiring"
    assert KNOWN_VIOLATIONS - found == set(), "fixed: remove these from KNOWN_VIOLATIONS"


def test_the_composition_root_is_where_bot_meets_handlers_and_formatters():
    imported = {i.imported for i in imports_under("bot") if i.module == WIRING}
    assert "handlers" in imported
    assert any(within(name, "formatters") for name in imported)


def test_bot_imports_the_sandbox_only_in_the_cli_and_the_demo():
    found = {i.module for i in imports_under("bot") if within(i.imported, "sandbox")}
    assert found <= SANDBOX_WIRED_BY


def test_only_the_cli_runs_the_demo():
    found = {i.module for i in imports_under("bot") if i.imported in DEMO}
    assert found <= {CLI, *DEMO}


def test_tests_import_the_demos_stack_not_its_tour_or_prompt():
    found = {(i.module, i.imported) for i in imports_under("tests") if i.imported in DEMO - {STACK} and i.module not in DEMO_TESTS}
    assert found == set(), "import what the test needs from bot.stack"


def test_formatters_import_no_handlers_and_no_transport_at_run_time():
    found = imports_under("formatters")
    assert [i for i in found if within(i.imported, "handlers")] == []
    assert [i for i in found if i.runs and within(i.imported, *TRANSPORT) and i.imported not in FORMATTERS_MAY_RUN] == []


def test_the_sandbox_imports_none_of_the_bot():
    assert [i for i in imports_under("sandbox") if within(i.imported, "bot", "handlers", "formatters")] == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import formatters.home\n", [("formatters.home", True)]),
        ("from formatters import limits as fmt\n", [("formatters.limits", True)]),
        ("from formatters.blocks import Payload\n", [("formatters.blocks", True)]),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bot.api import AgentClient\n",
            [("typing", True), ("bot.api", False)],
        ),
        ("def f():\n    from handlers.home import home_service\n", [("handlers.home", True)]),
        ("from .follower import Follower\n", [("bot.services.sessions.follower", True)]),
    ],
)
def test_imports_are_read_wherever_they_are(source, expected):
    """The reader itself: aliases, submodules named in ``from``, ``TYPE_CHECKING``, function bodies, relative imports."""
    path = ROOT / "bot" / "services" / "sessions" / "__layers_probe__.py"
    assert [(i.imported, i.runs) for i in imports_of(path, source)] == expected
