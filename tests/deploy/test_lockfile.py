"""The container image's locks (deploy/*.lock) still say what pyproject.toml asks for.

``scripts/lock-requirements`` writes them with ``uv pip compile``; when a dependency of pyproject.toml is
added, dropped or its range changed and the locks were not written again, these tests fail and say so.
The format read is pip's requirements file as uv writes it: ``name==version [; marker] \\`` then
``--hash=sha256:...`` lines, then ``# via`` comments naming who asked for the package.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import ROOT

PROJECT = "agent-chatops (pyproject.toml)"
"""How uv's ``# via`` comment names pyproject.toml's own dependencies."""
REGENERATE = "the lock is behind pyproject.toml: run scripts/lock-requirements"
IMAGE_EXTRAS = ("postgres",)
"""The extras the image carries besides ``[project] dependencies`` (PostgreSQL, for replicas)."""


@dataclass
class Pin:
    """One ``name==version`` line of a lock, with its hashes and the packages that asked for it."""

    name: str
    version: Version
    marker: str | None
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)


def parse_lock(text: str) -> list[Pin]:
    """The pins of a lock in uv's format (module docstring). Raises ``ValueError`` on a requirement
    that is not pinned to one version."""
    pins: list[Pin] = []
    in_via = False
    for raw in text.splitlines():
        line = raw.strip().removesuffix("\\").strip()
        if not line:
            continue
        if not raw.startswith((" ", "#")):
            requirement = Requirement(line)
            (spec,) = requirement.specifier  # one `==` specifier, else ValueError
            if spec.operator != "==":
                raise ValueError(f"not pinned: {line}")
            pins.append(Pin(canonicalize_name(requirement.name), Version(spec.version), str(requirement.marker or "") or None))
            in_via = False
        elif line.startswith("--hash="):
            pins[-1].hashes.append(line.removeprefix("--hash="))
        elif line.startswith("# via"):
            rest = line.removeprefix("# via").strip()
            pins[-1].via.extend([rest] if rest else [])
            in_via = not rest
        elif in_via and line.startswith("#   "):
            pins[-1].via.append(line.removeprefix("#").strip())
    return pins


def drift(requirements: list[str], pins: list[Pin]) -> list[str]:
    """What in ``requirements`` (PEP 508 strings) the ``pins`` do not satisfy, one line each: a
    package not pinned, or pinned (for some Python version) outside its range."""
    found: dict[str, list[Pin]] = {}
    for pin in pins:
        found.setdefault(pin.name, []).append(pin)
    problems = []
    for text in requirements:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if name not in found:
            problems.append(f"{text}: not in the lock")
        for pin in found.get(name, []):
            if not requirement.specifier.contains(pin.version, prereleases=True):
                problems.append(f"{text}: locked at {pin.version}")
        for extra in sorted(requirement.extras):  # sqlalchemy[asyncio] needs greenlet: what the extra adds must be locked too
            for needed in _extra_requirements(requirement.name, extra):
                if canonicalize_name(needed.name) not in found:
                    problems.append(f"{text}: {needed.name} (its {extra} extra) not in the lock")
    return problems


def _extra_requirements(package: str, extra: str) -> list[Requirement]:
    """What ``package``'s ``extra`` adds, on this platform, read from its installed metadata
    (``Requires-Dist`` with ``extra == ...`` markers); nothing when it is not installed here."""
    import importlib.metadata

    try:
        declared = importlib.metadata.requires(package) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    added = []
    for text in declared:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is not None and marker.evaluate({"extra": extra}) and not marker.evaluate({"extra": ""}):
            added.append(requirement)
    return added


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def image_requirements() -> list[str]:
    """What the image installs: pyproject's dependencies and :data:`IMAGE_EXTRAS`."""
    project = pyproject()["project"]
    return project["dependencies"] + [text for extra in IMAGE_EXTRAS for text in project["optional-dependencies"][extra]]


def lock(name: str) -> list[Pin]:
    return parse_lock((ROOT / "deploy" / name).read_text())


def test_runtime_lock_pins_every_dependency_within_its_range():
    assert drift(image_requirements(), lock("requirements.lock")) == [], REGENERATE


def test_runtime_lock_names_exactly_the_image_requirements_as_direct():
    # a dependency dropped from pyproject.toml would stay in a stale lock, and in the image
    direct = {pin.name for pin in lock("requirements.lock") if PROJECT in pin.via}
    wanted = {canonicalize_name(Requirement(text).name) for text in image_requirements()}
    assert direct == wanted, REGENERATE


def test_build_lock_pins_the_build_backend():
    assert drift(pyproject()["build-system"]["requires"], lock("requirements-build.lock")) == [], REGENERATE


def test_every_pin_is_hash_checked():
    # pip --require-hashes (Containerfile) refuses a requirement without a hash
    unhashed = [pin.name for name in ("requirements.lock", "requirements-build.lock") for pin in lock(name) if not pin.hashes]
    assert unhashed == []


LOCK = """\
# This file was autogenerated by uv via the following command:
#    scripts/lock-requirements
anyio==4.16.0 \\
    --hash=sha256:59bb \\
    --hash=sha256:c66a
    # via
    #   httpx
    #   starlette
httpx==0.28.1 \\
    --hash=sha256:d909
    # via agent-chatops (pyproject.toml)
numpy==2.4.6 ; python_full_version < '3.12' \\
    --hash=sha256:0001
    # via matplotlib
numpy==2.5.5 ; python_full_version >= '3.12' \\
    --hash=sha256:0002
    # via matplotlib
"""


def test_parse_lock_reads_pins_hashes_markers_and_via():
    assert parse_lock(LOCK) == [
        Pin("anyio", Version("4.16.0"), None, ["sha256:59bb", "sha256:c66a"], ["httpx", "starlette"]),
        Pin("httpx", Version("0.28.1"), None, ["sha256:d909"], [PROJECT]),
        Pin("numpy", Version("2.4.6"), 'python_full_version < "3.12"', ["sha256:0001"], ["matplotlib"]),
        Pin("numpy", Version("2.5.5"), 'python_full_version >= "3.12"', ["sha256:0002"], ["matplotlib"]),
    ]


def test_drift_names_a_range_the_lock_misses_and_a_package_it_lacks():
    pins = parse_lock(LOCK)
    assert drift(["httpx>=0.27,<1", "numpy>=2.4"], pins) == []
    assert drift(["httpx>=1", "numpy<2.5", "tenacity>=8"], pins) == [
        "httpx>=1: locked at 0.28.1",
        "numpy<2.5: locked at 2.5.5",
        "tenacity>=8: not in the lock",
    ]
