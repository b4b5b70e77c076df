"""Seeds: one secret master seed per verification, everything else derived by hashing (torch-free,
so the parent and both children derive the same values)."""

from __future__ import annotations

import hashlib
import secrets


def new_master_seed() -> int:
    return secrets.randbits(62)


def derive_seed(seed: int, *parts: object) -> int:
    digest = hashlib.sha256(f"{seed}:{':'.join(map(str, parts))}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)
