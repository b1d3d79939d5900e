"""Look up token counters by name, and count many texts with any counter.

No tokenizer for current Claude models is public. Pick a named tokenizer (``cl100k``
exact, ``chars4`` estimate) and keep a safety margin for the model you actually call.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

# Imported for their registration side effect: they add "cl100k" and "chars4".
from ctxselect.tokens import bpe as _bpe  # noqa: F401
from ctxselect.tokens import estimate as _estimate  # noqa: F401
from ctxselect.tokens.base import TOKENIZERS, TokenCounter

_LOCK = threading.Lock()
_COUNTERS: dict[str, TokenCounter] = {}


def get_counter(name: str) -> TokenCounter:
    """Return the shared counter registered as ``name`` (one instance per process).

    Raises:
        UnknownNameError: ``name`` is not a registered tokenizer; the message lists them.
    """
    counter = _COUNTERS.get(name)
    if counter is None:
        factory = TOKENIZERS.get(name)
        with _LOCK:
            counter = _COUNTERS.setdefault(name, factory())
    return counter


def count_many(counter: TokenCounter, texts: Sequence[str]) -> list[int]:
    """Count each text with ``counter``, through its ``count_many`` when it has one."""
    batch = getattr(counter, "count_many", None)
    if batch is not None:
        return list(batch(texts))
    return [counter.count(text) for text in texts]
