"""Seeded randomness: every generated fact depends only on the seed and what it is about."""

from __future__ import annotations

import hashlib
import random


def rng_for(seed: int, *parts: object) -> random.Random:
    """An RNG that depends only on (seed, parts): stable across processes, runs and call orders."""
    digest = hashlib.blake2b(":".join(map(str, (seed, *parts))).encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))
