"""A 13-word vocabulary for update tests: documents share words, so every retrieval
mode (keyword and hashed dense) scores many chunks, and 12-token chunks give each
document a handful of them."""

from __future__ import annotations

import ctxselect as cs

SPEC = cs.ChunkSpec(chunker="tokens", size=12)
WORDS = [
    "apple",
    "banana",
    "cherry",
    "date",
    "elder",
    "fig",
    "grape",
    "honey",
    "iris",
    "jade",
    "kiwi",
    "lemon",
    "mango",
]
