"""glibc ``malloc`` settings for a process that reads large analytics answers (issue #30, "RSS under
300 MB"): :func:`tune_allocator` at start (``bot.app.settle_heap``), :func:`trim` after a read of
days not stored. Elsewhere (musl, macOS) both do nothing."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from typing import Any

MMAP_THRESHOLD = 1 << 20
"""Bytes from which glibc's ``malloc`` maps a block of its own (``M_MMAP_THRESHOLD``), given back to
the system when freed (:func:`tune_allocator`)."""
ARENA_MAX = 2
"""glibc ``malloc`` arenas at most (``M_ARENA_MAX``; the default is 8 per core)."""


def tune_allocator() -> bool:
    """On glibc (Linux), fix ``M_MMAP_THRESHOLD`` at :data:`MMAP_THRESHOLD` and ``M_ARENA_MAX`` at
    :data:`ARENA_MAX` with ``mallopt(3)``, unless ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_ARENA_MAX``
    is set (glibc reads those itself). By default glibc raises its threshold to the largest block
    freed so far: after the first multi-megabyte analytics answer, the next ones come from the heap,
    where blocks pinned between them keep the freed memory resident (``usage 30d`` asked cold at
    50,000 users left the bot at about 310 MB; with the threshold fixed, 240 MB:
    docs/benchmarks.md). Returns True when it was applied; False elsewhere (musl, macOS)."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    done = True
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        done = mallopt(-3, MMAP_THRESHOLD) == 1 and done  # M_MMAP_THRESHOLD
    if "MALLOC_ARENA_MAX" not in os.environ:
        done = mallopt(-8, ARENA_MAX) == 1 and done  # M_ARENA_MAX
    return done


@functools.cache
def _libc() -> Any:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def trim() -> bool:
    """Give the free memory of every ``malloc`` arena back to the system (``malloc_trim(0)``: the
    holes left by freed answers inside the heap, which the threshold alone does not return). A few
    milliseconds; True when memory was released."""
    found = getattr(_libc(), "malloc_trim", None)
    return bool(found(0)) if found is not None else False
