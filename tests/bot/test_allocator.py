""":mod:`bot.allocator`: on glibc, large blocks freed go back to the system even after a larger one was
freed first, and a trim gives back what the heap kept (the analytics answers of days not stored,
issue #30: "RSS under 300 MB")."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt(3) is glibc's")

PATTERN = """
import sys
from bot.allocator import trim, tune_allocator

if sys.argv[1] == "tuned":
    assert tune_allocator()


def rss_mb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS:"))


base = rss_mb()
first = bytearray(8 << 20)  # an 8 MB answer, freed: glibc's own threshold rises to 8 MB
del first
answers, kept = [], []
for _ in range(40):
    answers.append(bytearray(4 << 20))  # 4 MB answers (zero-filled, so resident)...
    kept.append(bytearray(64 << 10))  # ...with small blocks that outlive them between
del answers
if sys.argv[1] == "trimmed":
    assert trim()
print(rss_mb() - base)
"""


def retained_mb(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", PATTERN, mode], capture_output=True, text=True, check=True, timeout=60)
    return int(done.stdout.strip())


def test_freed_answers_go_back_to_the_system_once_tuned():
    assert retained_mb("untuned") > 100  # glibc's default: 160 MB of freed answers stay resident
    assert retained_mb("tuned") < 20  # only the small blocks still alive (2.5 MB)


def test_a_trim_gives_back_the_holes_freed_answers_left_in_the_heap():
    assert retained_mb("trimmed") < 20
