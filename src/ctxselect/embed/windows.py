"""Embed a passage longer than the model reads: cut it into windows that fit, pool them.

A model with a limit (MiniLM reads 256 word pieces) silently drops the rest of a longer
text. :class:`WindowedEmbedder` wraps such an embedder: a passage over the limit is cut
at word-piece boundaries found with the model's own tokenizer (offsets, so the windows
cover the text exactly), each window is embedded, and the window vectors are averaged,
weighted by their word pieces, then scaled to unit length: one vector per passage.
Queries are embedded as they are. A passage within the limit is one window, the whole
text, so its vector is the model's own. The wrapper's ``model_id`` names the policy, so
windowed vectors never mix with truncated ones in a cache or an index. An index's
default, ``auto``, picks a policy once, from its chunks (:func:`auto_policy`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ctxselect._require import require
from ctxselect.embed.base import Embedder
from ctxselect.errors import ConfigError

AUTO = "auto"
WINDOWS = "windows"
TRUNCATE = "truncate"
EMBED_LONG = (AUTO, WINDOWS, TRUNCATE)
"""How an index embeds a passage longer than the model's limit (``embed_long``); ``auto``
picks one of the other two from the documents, once (:func:`auto_policy`)."""
POLICIES = (WINDOWS, TRUNCATE)
"""The policies an embedder itself can have (``make_embedder(embed_long=...)``)."""
DEFAULT_EMBED_LONG = TRUNCATE
"""An embedder made by name: measured (docs/benchmarks.md, "Embedding whole chunks"),
windows lift dense nDCG@10 a little on prose but not tuned hybrid, for 1.3-1.8x the
embedding work."""
DEFAULT_INDEX_EMBED_LONG = AUTO
"""An index: windows beat truncate on every code package measured (docs/benchmarks.md,
"Code retrieval: embedding long chunks whole"), so a mostly-code index gets them."""
DEFAULT_WINDOW_OVERLAP = 0
"""Word pieces shared by consecutive windows (measured in docs/benchmarks.md)."""

_SUFFIX = re.compile(r" \[windows (\d+)(?:/(\d+))? mean\]$")


@dataclass(frozen=True, slots=True)
class WindowPolicy:
    """Windows of at most ``limit`` word pieces (special tokens included), ``overlap`` shared."""

    limit: int
    overlap: int = DEFAULT_WINDOW_OVERLAP

    def __post_init__(self) -> None:
        if self.limit < 8 or not 0 <= self.overlap <= self.limit // 4:
            raise ConfigError(
                f"window limit must be >= 8 and overlap between 0 and limit / 4, got "
                f"limit {self.limit} and overlap {self.overlap}"
            )

    @property
    def suffix(self) -> str:
        """What the policy adds to the model id: `` [windows 256 mean]``."""
        shared = f"/{self.overlap}" if self.overlap else ""
        return f" [windows {self.limit}{shared} mean]"

    def describe(self) -> str:
        """Say in words how a long passage is embedded (``info``)."""
        shared = f", {self.overlap} shared" if self.overlap else ""
        return f"windows of {self.limit} word pieces{shared}, mean-pooled"


@dataclass(frozen=True, slots=True)
class TokenLimit:
    """An embedder's limit and the loader of its tokenizer (a ``tokenizers.Tokenizer``)."""

    limit: int
    load_tokenizer: Callable[[], Any]


def _minilm_tokenizer() -> Any:
    from ctxselect.embed import minilm

    return load_tokenizer(minilm.tokenizer_file())


def _minilm_limit() -> TokenLimit:
    from ctxselect.embed import minilm

    return TokenLimit(minilm.MAX_TOKENS, _minilm_tokenizer)


LIMITS: dict[str, Callable[[], TokenLimit]] = {"minilm": _minilm_limit}
"""embedder name -> its token limit; embedders absent here read any length (unchanged)."""


def load_tokenizer(path: str) -> Any:
    """Load a ``tokenizer.json`` with truncation and padding off (windows need every piece).

    Raises:
        MissingExtraError: ``tokenizers`` is not installed (it comes with ``ctxselect[dense]``).
    """
    # tokenizers: the model's own fast tokenizer with character offsets, already installed
    # with transformers, so windows are cut where the model itself would count.
    tokenizers = require("tokenizers", extra="dense", feature="embedding long chunks whole")
    tokenizer = tokenizers.Tokenizer.from_file(path)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class TokenWindows:
    """Cut texts into character spans of at most ``policy.limit`` word pieces each."""

    def __init__(self, tokenizer: Any, policy: WindowPolicy) -> None:
        self.tokenizer = tokenizer
        self.policy = policy
        self.special = int(tokenizer.post_processor.num_special_tokens_to_add(False))
        if policy.limit - self.special - policy.overlap < 4:
            raise ConfigError(f"window limit {policy.limit} leaves no room for text")

    def count(self, texts: Sequence[str]) -> list[int]:
        """Return the word pieces of each text as the model reads it (special tokens in)."""
        return [len(e.ids) for e in self.tokenizer.encode_batch(list(texts))]

    def spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Return each text's windows as ``(start, end)`` offsets.

        The first starts at 0, the last ends at ``len(text)``, each starts at or before the
        end of the one before (no gaps), and each holds at most ``limit`` word pieces
        counted by the tokenizer, special tokens included. A text that fits is one window.
        """
        return [found for found, _ in self.counted_spans(texts)]

    def counted_spans(self, texts: Sequence[str]) -> list[tuple[list[tuple[int, int]], list[int]]]:
        """:meth:`spans`, each with the word pieces of its windows (``[]`` for a text that
        fits: one window needs no weight), counted once, as the cutting checked them."""
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [
            self._fit(text, enc.offsets, enc.word_ids)
            for text, enc in zip(texts, encodings, strict=True)
        ]

    def _fit(
        self, text: str, offsets: list[tuple[int, int]], words: list[Any]
    ) -> tuple[list[tuple[int, int]], list[int]]:
        """Windows of ``text`` that fit and their pieces, re-counted; tighter if a cut
        changed the pieces."""
        room = self.policy.limit - self.special
        while True:
            found = _cut(text, offsets, words, room, self.policy.overlap)
            if len(found) == 1:
                return found, []
            counts = self.count([text[a:b] for a, b in found])
            excess = max(counts) - self.policy.limit
            if excess <= 0:
                return found, counts
            room -= excess  # a cut inside a word can tokenize into more pieces
            if room <= self.policy.overlap:
                raise ConfigError(
                    f"text of {len(text)} characters cannot be cut into windows of "
                    f"{self.policy.limit} word pieces: its pieces change wherever it is cut"
                )


def _cut(
    text: str, offsets: list[tuple[int, int]], words: list[Any], room: int, overlap: int
) -> list[tuple[int, int]]:
    """Token ranges of at most ``room`` pieces, ending at word ends where one is near."""
    n = len(offsets)
    if n <= room:
        return [(0, len(text))]

    def word_start(i: int) -> bool:
        return i <= 0 or i >= n or words[i] is None or words[i] != words[i - 1]

    spans: list[tuple[int, int]] = []
    start, prev_end = 0, 0
    while start < n:
        end = min(start + room, n)
        back = end
        while end < n and back > start + room // 2 and not word_start(back):
            back -= 1
        end = back if end < n and back > start + room // 2 else end
        first = 0 if not spans else min(offsets[start][0], prev_end)
        last = len(text) if end >= n else offsets[end - 1][1]
        spans.append((first, last))
        prev_end = last
        if end >= n:
            break
        nxt = max(end - overlap, start + 1)
        while nxt < end and not word_start(nxt):
            nxt += 1
        start = nxt
    return spans


class WindowedEmbedder:
    """An embedder that embeds every passage whole: windows within the limit, pooled.

    Attributes:
        inner: The embedder with the limit.
        policy: Window size and overlap.
        model_id: ``inner.model_id`` plus the policy (`` [windows 256 mean]``).
    """

    def __init__(
        self,
        inner: Embedder,
        policy: WindowPolicy,
        load_tokenizer: Callable[[], Any],
    ) -> None:
        self.inner = inner
        self.policy = policy
        self.name = inner.name
        self.dim = inner.dim
        self.model_id = inner.model_id + policy.suffix
        self._load = load_tokenizer
        self._windows: TokenWindows | None = None

    @property
    def windows(self) -> TokenWindows:
        """The splitter (the tokenizer loads on first use: queries never need it)."""
        if self._windows is None:
            self._windows = TokenWindows(self._load(), self.policy)
        return self._windows

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Return one unit-length row per text; passages over the limit are pooled windows."""
        if query:
            return np.asarray(self.inner.embed(texts, query=True), dtype=np.float32)
        counted = self.windows.counted_spans(texts)
        pieces = [
            text[a:b] for text, (cuts, _) in zip(texts, counted, strict=True) for a, b in cuts
        ]
        if len(pieces) == len(texts):  # nothing over the limit: the model's own vectors
            return np.asarray(self.inner.embed(texts), dtype=np.float32)
        vectors = np.asarray(self.inner.embed(pieces), dtype=np.float32)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        row = 0
        for i, (cuts, counts) in enumerate(counted):
            part = vectors[row : row + len(cuts)]
            w = np.asarray(counts, dtype=np.float32)  # word pieces weigh each window
            pooled = (w[:, None] * part).sum(axis=0) if len(cuts) > 1 else part[0]
            norm = float(np.linalg.norm(pooled))
            out[i] = pooled / norm if norm > 0 else part[0]
            row += len(cuts)
        return out


def _recorded_policy(model_id: str) -> WindowPolicy | None:
    """The window policy a model id records (`` [windows 256/32 mean]``); None: truncated."""
    found = _SUFFIX.search(model_id)
    return WindowPolicy(int(found.group(1)), int(found.group(2) or 0)) if found else None


def long_policy_of(name: str, model_id: str) -> str | None:
    """The policy a recorded embedder embedded long passages with: ``windows`` or
    ``truncate``; None for an embedder that reads any length (no policy applies)."""
    if name not in LIMITS:
        return None
    return WINDOWS if _recorded_policy(model_id) else TRUNCATE


def with_long_policy(
    embedder: Embedder,
    embed_long: str | None = None,
    *,
    model_id: str | None = None,
    overlap: int = DEFAULT_WINDOW_OVERLAP,
) -> Embedder:
    """Return ``embedder`` set to embed long passages as ``embed_long`` says.

    Args:
        embedder: A freshly made embedder (cutting at its limit, if it has one).
        embed_long: ``windows`` or ``truncate``; None: the default, ``truncate``
            (``auto`` is an index's: :func:`auto_policy`).
        model_id: A recorded model id (an index's) to match: its policy wins, so an index
            built before windows (or with ``truncate``) keeps embedding as it was built.
        overlap: Word pieces shared by consecutive windows.

    Raises:
        ConfigError: ``embed_long`` is not one of :data:`POLICIES`.
    """
    if model_id is not None:
        recorded = _recorded_policy(model_id)
        embed_long = WINDOWS if recorded else TRUNCATE
        overlap = recorded.overlap if recorded else overlap
    embed_long = embed_long or DEFAULT_EMBED_LONG
    if embed_long == AUTO:
        raise ConfigError(
            f"embed_long {AUTO} is decided by an index from the chunks it embeds: give it "
            f"to index_paths or `ctxselect index --embed-long {AUTO}`; an embedder made on "
            f"its own takes {' or '.join(POLICIES)}"
        )
    if embed_long not in POLICIES:
        raise ConfigError(
            f"embed_long must be one of {', '.join(POLICIES)}, got {embed_long!r}: "
            f"{WINDOWS} embeds a long chunk whole, {TRUNCATE} only its start"
        )
    known = LIMITS.get(embedder.name)
    if embed_long == TRUNCATE or known is None or isinstance(embedder, WindowedEmbedder):
        return embedder
    limit = known()
    return WindowedEmbedder(embedder, WindowPolicy(limit.limit, overlap), limit.load_tokenizer)


def check_embed_long(value: object) -> str:
    """Return ``value`` as an index takes ``embed_long`` (None: :data:`DEFAULT_INDEX_EMBED_LONG`).

    Raises:
        ConfigError: ``value`` is not one of :data:`EMBED_LONG` (the message lists them).
    """
    value = DEFAULT_INDEX_EMBED_LONG if value is None else value
    if not isinstance(value, str) or value not in EMBED_LONG:
        raise ConfigError(
            f"embed_long must be one of {', '.join(EMBED_LONG)}, got {value!r}: {AUTO} "
            f"picks {WINDOWS} when most chunks are code, else {TRUNCATE}; {WINDOWS} embeds "
            f"a long chunk whole, {TRUNCATE} only its start"
        )
    return value


@dataclass(frozen=True, slots=True)
class AutoChoice:
    """What ``embed_long="auto"`` chose for an index, and why; decided once, at the write
    that first embedded it (the manifest keeps it as ``embed_long_auto``).

    Attributes:
        embedder: The embedder's registry name then.
        policy: ``windows`` or ``truncate``.
        code_chunks: The chunks of code files among those embedded then.
        chunks: The chunks embedded then.
    """

    embedder: str
    policy: str
    code_chunks: int
    chunks: int

    def reason(self) -> str:
        """Say why: ``auto: 412 of 530 chunks are code``."""
        return f"{AUTO}: {self.code_chunks} of {self.chunks} chunks are code"

    def holds_for(self, name: str, model_id: str) -> bool:
        """Whether the index's embedder is still the one chosen for (same name and policy)."""
        return name == self.embedder and long_policy_of(name, model_id) == self.policy

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-able form the manifest keeps."""
        return {
            "embedder": self.embedder,
            "policy": self.policy,
            "code_chunks": self.code_chunks,
            "chunks": self.chunks,
        }

    @classmethod
    def from_dict(cls, raw: Any) -> AutoChoice | None:
        """Read a manifest's record; None when absent or not readable (then info gives no
        reason: the policy itself is in the model id)."""
        try:
            made = cls(raw["embedder"], raw["policy"], raw["code_chunks"], raw["chunks"])
        except (KeyError, TypeError):
            return None
        counts = (made.code_chunks, made.chunks)
        whole = all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts)
        return made if whole and made.policy in POLICIES else None


def auto_policy(name: str, code_chunks: int, chunks: int) -> AutoChoice:
    """Choose an index's policy from the chunks it embeds first: ``windows`` when code
    chunks are the majority, else ``truncate``.

    Measured (docs/benchmarks.md): on code, windows beat truncate on every package (dense
    MRR@10 +0.03 to +0.12); on prose, tuned hybrid moved -0.007 to +0.004 for 1.75x the
    embedding work.
    """
    policy = WINDOWS if 2 * code_chunks > chunks else TRUNCATE
    return AutoChoice(name, policy, code_chunks, chunks)


def describe_long_policy(name: str, model_id: str, auto: AutoChoice | None = None) -> str:
    """Say how an index's embedder handles a passage over its limit (for ``info``), and why
    when ``auto`` chose it (``auto``: the index's record, if any)."""
    why = f" ({auto.reason()})" if auto is not None and auto.holds_for(name, model_id) else ""
    recorded = _recorded_policy(model_id)
    if recorded:
        return recorded.describe() + why
    known = LIMITS.get(name)
    if known is None:
        return "whole (the model has no length limit)"
    return f"truncated at {known().limit} word pieces{why}"
