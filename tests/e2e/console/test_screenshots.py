"""``scripts/screenshots`` still runs: it drives the console in Chromium and writes the README's pictures.

Run as the README says (a separate process, ``python scripts/screenshots --out DIR``), into a temporary
directory; each picture must be a PNG of the window's width and a plausible height. What is *in* the
pictures is what ``test_console.py`` asserts step by step.
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.e2e.console.conftest import require_chromium

SCRIPT = ROOT / "scripts" / "screenshots"
PICTURES = ("usage.png", "readiness.png", "session-thread.png", "home.png", "approval.png", "digest.png")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """``(width, height)`` from a PNG's IHDR chunk (PNG spec, 11.2.2); fails on anything else."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE and head[12:16] == b"IHDR", f"{path.name} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_the_screenshots_script_writes_every_picture_of_the_readme(tmp_path: Path) -> None:
    chromium = require_chromium()

    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path), "--chromium", chromium],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [str(tmp_path / name) for name in PICTURES]
    for name in PICTURES:
        width, height = png_size(tmp_path / name)
        assert width in (1280, 1600) and 760 <= height <= 1500, (name, width, height)
        assert (tmp_path / name).stat().st_size > 40_000, f"{name} looks empty"
    readme = (ROOT / "README.md").read_text()
    assert set(PICTURES) <= set(re.findall(r"\(docs/images/([\w-]+\.png)\)", readme)), "the README shows every picture"
    assert all((ROOT / "docs" / "images" / name).is_file() for name in PICTURES)
