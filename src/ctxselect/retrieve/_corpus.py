"""Build side of the keyword indexes: texts -> word ids -> CSC postings.

The costly part of a keyword build is Python touching every token once (a regex, then a
dict look-up per token); everything after that runs on int32 arrays. So each text is
read once per analysis, and two analyses share that one pass when their words can be
derived from the same base words: the BM25 analyzer's words *are* the lowercase
``\\b\\w\\w+\\b`` words (:data:`BASE_WORDS`), and the TF-IDF analyzer's ``[a-z]{3,}`` runs
of a text are exactly the ``[a-z]{3,}`` runs of those words in order (a run of ASCII
letters never crosses a non-word character, so it lies inside one base word). An analyzer
says so with a ``base_split`` attribute (see :func:`word_pass_of`); the writer hands both
analyses one list of texts with a ``memo`` dict (``ctxselect.index.writer.SharedTexts``),
which keeps the base pass between them.
"""

from __future__ import annotations

import itertools
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ctxselect.retrieve.analyze import BM25_TOKEN_PATTERN, Analyzer, same_word

BASE_WORDS = f"lower:{BM25_TOKEN_PATTERN}"
"""Names the base word pass: lowercase, then every ``\\b\\w\\w+\\b`` match."""


class _WordChars(dict[int, int]):
    """``str.translate`` table: a word character (``\\w``: alphanumeric or ``_``, as in
    ``re``) stays, any other becomes a space. Filled on first sight of each character."""

    def __missing__(self, code: int) -> int:
        char = chr(code)
        kept = self[code] = code if char.isalnum() or char == "_" else 0x20
        return kept


_WORD_CHARS = _WordChars()
_INT32_MAX = np.iinfo(np.int32).max
_BLOCK = 1 << 16  # tokens expanded at once by derive: small temporaries, few numpy calls


class WordPass(NamedTuple):
    """Every token of a corpus as a word id, text by text.

    Attributes:
        words: The distinct words, id order (first occurrence first).
        tokens: The word id of every token, texts one after another (int32).
        counts: How many tokens each text has (int64).
    """

    words: list[str]
    tokens: np.ndarray
    counts: np.ndarray


def word_pass(texts: Iterable[str], words_of: Callable[[str], list[str]]) -> WordPass:
    """Split every text with ``words_of`` and number the words (one dict look-up a token).

    Tokens are kept as C ints, never as a list of str or int objects: a corpus's words as
    Python strings would take several times its text's memory.
    """
    word_ids: defaultdict[str, int] = defaultdict(itertools.count().__next__)
    get_id = word_ids.__getitem__
    tokens = array("i")
    counts = array("q")
    for text in texts:
        before = len(tokens)
        tokens.extend(map(get_id, words_of(text)))
        counts.append(len(tokens) - before)
    return WordPass(
        list(word_ids),
        np.frombuffer(tokens, dtype=np.intc).astype(np.int32, copy=False),
        np.frombuffer(counts, dtype=np.int64),
    )


def base_words(text: str) -> list[str]:
    """The runs of word characters of ``text`` lowercased, one-character runs included.

    Without those, they are the ``\\b\\w\\w+\\b`` matches (:data:`BASE_WORDS`);
    translate-and-split finds them in two thirds of the regex's time (measured on SciFact).
    """
    return text.lower().translate(_WORD_CHARS).split()


def base_pass(texts: Iterable[str]) -> WordPass:
    """The word pass of :data:`BASE_WORDS`: :func:`base_words` without one-character words."""
    passed = word_pass(texts, base_words)
    short = np.fromiter((len(w) < 2 for w in passed.words), dtype=bool, count=len(passed.words))
    if not short.any():
        return passed
    # no token-sized int64 temporaries (this runs near a build's memory peak): the
    # dropped tokens' positions give each text's new count, the rest is done in place
    keep = short[passed.tokens]
    dropped = np.flatnonzero(keep)
    np.logical_not(keep, out=keep)
    text_of = np.searchsorted(np.cumsum(passed.counts), dropped, side="right")
    counts = passed.counts - np.bincount(text_of, minlength=len(passed.counts))
    del dropped, text_of
    tokens = passed.tokens[keep]
    del keep
    new_id = (np.cumsum(~short) - 1).astype(np.int32)
    np.take(new_id, tokens, out=tokens)
    words = [w for w, s in zip(passed.words, short.tolist(), strict=True) if not s]
    return WordPass(words, tokens, counts)


def derive(base: WordPass, split: Callable[[str], list[str]]) -> WordPass:
    """Return the word pass whose tokens are ``split(w)`` for each base token ``w``, in order.

    ``split`` runs once per distinct base word; the token stream is expanded with numpy a
    block at a time, so the temporaries stay small (this runs at a build's memory peak).
    """
    if split is same_word:
        return base
    new_ids: defaultdict[str, int] = defaultdict(itertools.count().__next__)
    pieces = [split(w) for w in base.words]
    lens = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    flat = np.fromiter(
        map(new_ids.__getitem__, itertools.chain.from_iterable(pieces)),
        dtype=np.int32,
        count=int(lens.sum()),
    )
    del pieces
    first_piece = np.cumsum(lens) - lens
    bounds = np.zeros(len(base.counts) + 1, dtype=np.int64)
    np.cumsum(base.counts, out=bounds[1:])
    before = np.zeros(len(bounds), dtype=np.int64)  # output tokens before each text ends
    out: list[np.ndarray] = []
    done = 0
    for s in range(0, len(base.tokens), _BLOCK):
        block = base.tokens[s : s + _BLOCK]
        tok_lens = lens[block]
        ends = np.cumsum(tok_lens)
        lo, hi = np.searchsorted(bounds, [s, s + len(block)], side="right")
        before[lo:hi] = done + ends[bounds[lo:hi] - s - 1]
        # position in ``flat`` of every output token: its base token's first piece + offset
        start = first_piece[block] - ends + tok_lens
        positions = np.repeat(start, tok_lens) + np.arange(int(ends[-1]), dtype=np.int64)
        out.append(flat[positions])
        done += int(ends[-1])
    tokens = np.concatenate(out) if out else np.zeros(0, dtype=np.int32)
    return WordPass(list(new_ids), tokens, np.diff(before))


def word_pass_of(texts: Sequence[str], analyzer: Analyzer) -> WordPass:
    """Return ``analyzer``'s word pass over ``texts``, sharing the base pass when it can.

    An analyzer whose ``base_split`` is a function ``f`` has as words of a text the
    concatenation of ``f(w)`` over its base words ``w``; given texts with a ``memo`` dict
    (``ctxselect.index.writer.SharedTexts``), the base pass is made once for every such
    analyzer and kept there. Otherwise the texts are split directly.
    """
    split: Callable[[str], list[str]] | None = getattr(analyzer, "base_split", None)
    memo: dict[str, Any] | None = getattr(texts, "memo", None)
    if split is None or memo is None:
        return word_pass(texts, analyzer.words)
    base = memo.get(BASE_WORDS)
    if base is None:
        base = memo[BASE_WORDS] = base_pass(texts)
    return derive(base, split)


class Postings(NamedTuple):
    """The analyzed corpus: vocabulary, CSC postings and lengths (terms per row)."""

    vocab: list[str]
    indptr: np.ndarray
    rows: np.ndarray
    tfs: np.ndarray
    lengths: np.ndarray
    word_terms: dict[str, int]


def _pair_keys(passed: WordPass, to_term: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Return ``term * n + row`` of every token that has a term, and terms per row (int32).

    A block of tokens at a time: the corpus-sized temporaries of doing it at once were the
    largest part of a build's peak memory.
    """
    ends = np.cumsum(passed.counts)  # the token after each row's last
    lengths = np.zeros(n, dtype=np.int64)
    keys = np.empty(len(passed.tokens), dtype=to_term.dtype)  # filled in place, no parts
    filled = 0
    for s in range(0, len(passed.tokens), _BLOCK):
        terms = to_term[passed.tokens[s : s + _BLOCK]]
        rows = np.searchsorted(ends, np.arange(s, s + len(terms)), side="right")
        keep = terms >= 0
        terms, rows = terms[keep], rows[keep].astype(to_term.dtype)
        if len(rows):
            lengths[rows[0] : rows[-1] + 1] += np.bincount(rows - rows[0])
        terms *= max(n, 1)
        terms += rows
        keys[filled : filled + len(terms)] = terms
        filled += len(terms)
    return keys[:filled], lengths.astype(np.int32)


def _count_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the distinct values of sorted ``keys`` and how often each occurs.

    The run starts are found a block at a time into int32 (int64 only past int32 range):
    a build's memory peak is here, and one corpus-sized int64 array of positions, then
    its int64 differences, were the largest part of it.
    """
    edge = np.empty(len(keys), dtype=bool)
    edge[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=edge[1:])
    wide = len(keys) > _INT32_MAX
    starts = np.empty(int(np.count_nonzero(edge)), dtype=np.int64 if wide else np.int32)
    done = 0
    for s in range(0, len(edge), _BLOCK):
        found = np.flatnonzero(edge[s : s + _BLOCK])
        found += s
        starts[done : done + len(found)] = found
        done += len(found)
    counts = np.empty_like(starts)  # the next start (or the end) minus this start
    np.subtract(starts[1:], starts[:-1], out=counts[:-1])
    counts[-1:] = len(keys) - starts[-1:]
    del starts  # before the distinct keys are made: the two are never held together
    return keys[edge], counts


def csc_postings(passed: WordPass, analyzer: Analyzer, n: int) -> Postings:
    """Map words to terms (the whole vocabulary in one ``map_words`` call) and count each
    (term, row) pair; postings sorted by term, then row. The vocabulary is sorted, so term
    ids are reproducible."""
    words = passed.words
    terms = analyzer.map_words(words)
    vocab = sorted({t for t in terms if t is not None})
    term_id = {t: i for i, t in enumerate(vocab)}
    word_terms = {w: (-1 if t is None else term_id[t]) for w, t in zip(words, terms, strict=True)}
    wide = len(vocab) * max(n, 1) > _INT32_MAX  # (term, row) keys need int64
    key_type = np.int64 if wide else np.int32
    to_term = np.fromiter(word_terms.values(), dtype=key_type, count=len(words))
    stride = max(n, 1)
    keys, lengths = _pair_keys(passed, to_term, n)
    keys.sort()
    keys, tfs = _count_keys(keys)  # one key per posting, sorted: term-major, then row
    # a term's postings start where its first possible key would sort; the row is the
    # key's remainder, taken in place (no posting-sized term or product arrays)
    firsts = np.arange(len(vocab) + 1, dtype=keys.dtype) * stride  # keys' dtype: no copy
    indptr = np.searchsorted(keys, firsts).astype(np.int64)
    np.remainder(keys, stride, out=keys)
    rows = keys.astype(np.int32)
    return Postings(vocab, indptr, rows, tfs, lengths, word_terms)
