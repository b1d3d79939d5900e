"""Count tokens once per distinct text: what a sweep needs to pack the same chunks often."""

from __future__ import annotations

import re

from ctxselect.tokens.counters import get_counter

# Tokenizers whose pre-tokenizer never joins a newline to the non-space character after
# it (budget/render.py relies on the same property): counts add up across such breaks.
_LINE_ADDITIVE = frozenset({"cl100k"})
_LINE_START = re.compile(r"\n(?=\S)")
_MEMO_MAX = 1_000_000


class MemoCounter:
    """Count tokens through another counter, once per distinct text.

    A sweep packs the same ranked chunks again for every budget and packer; counting
    each framed piece once makes that cheap. For tokenizers in ``_LINE_ADDITIVE`` a text
    is cut where a line starts with a non-space character and the parts are counted (and
    remembered) apart: exact for them, and merged pieces reuse their chunks' counts. A
    test checks that selections equal those made with the plain counter.
    """

    def __init__(self, tokenizer: str) -> None:
        self.counter = get_counter(tokenizer)
        self.split = tokenizer in _LINE_ADDITIVE
        self.memo: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Return the number of tokens ``text`` encodes to in the tokenizer."""
        if not self.split:
            return self._one(text)
        total, start = 0, 0
        for match in _LINE_START.finditer(text):
            total += self._one(text[start : match.end()])
            start = match.end()
        return total + self._one(text[start:])

    def _one(self, text: str) -> int:
        tokens = self.memo.get(text)
        if tokens is None:
            if len(self.memo) >= _MEMO_MAX:
                self.memo.clear()
            tokens = int(self.counter.count(text))
            self.memo[text] = tokens
        return tokens
