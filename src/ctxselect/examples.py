"""Few-shot examples under a token budget: relevant, mutually diverse, in a stable order.

A library is a JSONL file, one ``{"input": ..., "output": ...}`` object per line (other
keys are ignored). :meth:`ExampleLibrary.select` ranks the examples by BM25 of their
inputs against the new input, then picks greedily by maximal marginal relevance (MMR;
Carbonell & Goldstein, SIGIR 1998): each pick maximises
``λ · relevance − (1 − λ) · max similarity to the examples already picked``, where
relevance is the BM25 score over the best score and similarity is the cosine of the
inputs' tf-idf vectors over BM25's own terms (stemmed, stop words out). An example whose
rendered text does not fit the tokens left is skipped, so a smaller one may still come.
Ties go to the earlier library line. The prompt order is stable: least relevant first,
most relevant last, next to the new input (models weigh the nearest examples most; Zhao
et al., "Calibrate Before Use", ICML 2021).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ctxselect import api
from ctxselect import tokens as _tokens
from ctxselect.config import DEFAULT_TOKENIZER
from ctxselect.errors import ConfigError, InputError
from ctxselect.retrieve.analyze import BM25Analyzer
from ctxselect.sessions.limits import check_budget, check_k, check_query
from ctxselect.types import Chunk

DEFAULT_EXAMPLES_BUDGET = 1000
MIN_EXAMPLES_BUDGET = 20
DEFAULT_EXAMPLES_K = 4
MAX_EXAMPLES_K = 20
DEFAULT_MMR_LAMBDA = 0.7
MAX_INPUT_CHARS = 8000


@dataclass(frozen=True, slots=True)
class Example:
    """One example of a library: an input, the output wanted for it, its 1-based line."""

    input: str
    output: str
    line: int


@dataclass(frozen=True, slots=True)
class SelectedExample:
    """A chosen example: ``score`` is its BM25 score, ``tokens`` its rendered cost."""

    line: int
    input: str
    output: str
    score: float
    tokens: int


@dataclass(frozen=True, slots=True)
class DroppedExample:
    """A relevant example left out because it did not fit the tokens left."""

    line: int
    tokens: int
    reason: str


@dataclass(frozen=True, slots=True)
class ExampleSelection:
    """Examples chosen for an input, in prompt order (most relevant last).

    ``tokens_used`` (the rendered block, :func:`render`) never exceeds ``budget``.
    ``candidates`` counts the library's examples sharing a term with the input.
    """

    examples: tuple[SelectedExample, ...]
    tokens_used: int
    budget: int
    k: int
    mmr_lambda: float
    candidates: int
    library: str
    library_size: int
    dropped: tuple[DroppedExample, ...] = ()
    note: str = ""


def render_example(example: Example | SelectedExample) -> str:
    """Return an example as a prompt holds it: ``Input: ...``, ``Output: ...``, a blank line."""
    return f"Input: {example.input}\nOutput: {example.output}\n\n"


def render(selection: ExampleSelection) -> str:
    """Return the selected examples as one block, in prompt order."""
    return "".join(render_example(e) for e in selection.examples)


def load_examples(path: str | os.PathLike[str]) -> list[Example]:
    """Read a JSONL library of ``{"input", "output"}`` objects (blank lines skipped).

    Raises:
        InputError: The file is missing or unreadable, a line is not such an object
            (the message names ``file:line``), or the library holds no example.
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read().splitlines()
    except OSError as exc:
        raise InputError(f"cannot read example library {os.fspath(path)}: {exc.strerror}") from exc
    examples = [_parse(path, n, line) for n, line in enumerate(raw, 1) if line.strip()]
    if not examples:
        raise InputError(
            f"example library {os.fspath(path)} holds no examples: write one JSON object "
            f'{{"input": ..., "output": ...}} per line'
        )
    return examples


def _parse(path: str | os.PathLike[str], n: int, line: bytes) -> Example:
    where = f"{os.fspath(path)}:{n}"
    hint = 'each line must be a JSON object {"input": "...", "output": "..."}'
    try:
        record = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{where}: not valid UTF-8: save the library as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg}): {hint}") from None
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected an object, got {type(record).__name__}: {hint}")
    for key in ("input", "output"):
        if key not in record:
            raise InputError(f"{where}: {key!r} is missing: {hint}")
        if not isinstance(record[key], str):
            got = type(record[key]).__name__
            raise InputError(f"{where}: {key!r} must be a string, got {got}: {hint}")
    if not record["input"].strip():
        raise InputError(f"{where}: 'input' is empty: every example needs an input to match")
    return Example(record["input"], record["output"], n)


class ExampleLibrary:
    """Examples indexed for selection: BM25 over inputs, tf-idf vectors, rendered costs.

    Args:
        examples: The library, in file order.
        tokenizer: Token counter name the budget is counted in (default ``cl100k``).
        source: Where the library came from (shown in results).
    """

    def __init__(
        self, examples: Sequence[Example], *, tokenizer: str = DEFAULT_TOKENIZER, source: str = ""
    ) -> None:
        if not examples:
            raise ConfigError("an example library needs at least one example")
        self.examples = list(examples)
        self.source = source
        self.tokenizer = tokenizer
        counter = _tokens.get_counter(tokenizer)
        self._costs = _tokens.count_many(counter, [render_example(e) for e in self.examples])
        self._count = counter.count
        # Zero-padded ids: ranking ties break on chunk id, i.e. on library order.
        chunks = [
            Chunk(f"{i:07d}", f"{i:07d}", 0, 0, len(e.input), e.input)
            for i, e in enumerate(self.examples)
        ]
        self._retriever = api.retriever_for(chunks, "bm25")
        self._vectors = _tfidf_vectors([e.input for e in self.examples])

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, tokenizer: str = DEFAULT_TOKENIZER
    ) -> ExampleLibrary:
        """Read a JSONL library (see :func:`load_examples`) and index it."""
        return cls(load_examples(path), tokenizer=tokenizer, source=os.fspath(path))

    def __len__(self) -> int:
        return len(self.examples)

    def select(
        self,
        input: str,
        budget: int = DEFAULT_EXAMPLES_BUDGET,
        k: int = DEFAULT_EXAMPLES_K,
        *,
        mmr_lambda: float = DEFAULT_MMR_LAMBDA,
    ) -> ExampleSelection:
        """Choose up to ``k`` relevant, mutually diverse examples that fit ``budget`` tokens.

        Raises:
            ConfigError: ``input`` is empty or too long; ``budget``, ``k`` or
                ``mmr_lambda`` is out of range.
        """
        check_query(input, MAX_INPUT_CHARS, what="input")
        check_budget(budget, None, MIN_EXAMPLES_BUDGET)
        check_k(k, MAX_EXAMPLES_K)
        if not 0.0 <= mmr_lambda <= 1.0:
            raise ConfigError(f"mmr_lambda must be between 0 and 1, got {mmr_lambda}")
        hits = self._retriever.search(input, min(len(self.examples), max(50, 10 * k)))
        rows = [int(h.chunk_id) for h in hits]
        top = hits[0].score if hits else 1.0
        relevance = {r: h.score / top for r, h in zip(rows, hits, strict=True)}
        picked, dropped = self._mmr(rows, relevance, budget, k, mmr_lambda)
        scores = {int(h.chunk_id): h.score for h in hits}
        # Prompt order: the reverse of rank order, so the most relevant example comes last.
        ordered = sorted(picked, key=rows.index, reverse=True)
        chosen = tuple(self._selected(r, scores[r]) for r in ordered)
        while chosen and self._count("".join(map(render_example, chosen))) > budget:
            chosen = chosen[1:]  # only for counters that count a concatenation higher
        note = "" if hits else "no example shares a term with the input"
        return ExampleSelection(
            chosen,
            self._count("".join(map(render_example, chosen))),
            budget,
            k,
            mmr_lambda,
            len(hits),
            self.source,
            len(self.examples),
            tuple(dropped),
            note,
        )

    def _mmr(
        self, rows: list[int], relevance: dict[int, float], budget: int, k: int, lam: float
    ) -> tuple[list[int], list[DroppedExample]]:
        """Greedy MMR over ``rows`` (rank order), skipping examples that do not fit."""
        picked: list[int] = []
        dropped: list[DroppedExample] = []
        position = {r: i for i, r in enumerate(rows)}
        pool = list(rows)
        left = budget
        while pool and len(picked) < k:
            best = max(
                pool,
                key=lambda r: (
                    lam * relevance[r]
                    - (1 - lam) * max((self._similarity(r, p) for p in picked), default=0.0),
                    -position[r],
                ),
            )
            pool.remove(best)
            cost = self._costs[best]
            if cost > left:
                reason = f"does not fit: needs {cost} tokens, {left} left"
                dropped.append(DroppedExample(self.examples[best].line, cost, reason))
                continue
            picked.append(best)
            left -= cost
        return picked, dropped

    def _similarity(self, a: int, b: int) -> float:
        va, vb = self._vectors[a], self._vectors[b]
        if len(va) > len(vb):
            va, vb = vb, va
        return sum(w * vb.get(t, 0.0) for t, w in va.items())

    def _selected(self, row: int, score: float) -> SelectedExample:
        e = self.examples[row]
        return SelectedExample(e.line, e.input, e.output, round(score, 4), self._costs[row])


def _tfidf_vectors(texts: Sequence[str]) -> list[dict[str, float]]:
    """Unit-length tf-idf vectors over BM25 terms; idf = ln((1 + N) / (1 + df)) + 1."""
    analyzer = BM25Analyzer()
    counts = [Counter(analyzer.terms(t)) for t in texts]
    df = Counter(term for c in counts for term in c)
    n = len(texts)
    vectors = []
    for c in counts:
        weights = {t: tf * (math.log((1 + n) / (1 + df[t])) + 1) for t, tf in c.items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        vectors.append({t: w / norm for t, w in weights.items()})
    return vectors


def drop_least_relevant(selection: ExampleSelection) -> ExampleSelection | None:
    """Remove the first (least relevant) example; None when nothing is left to remove."""
    if not selection.examples:
        return None
    first = selection.examples[0]
    return dataclasses.replace(
        selection,
        examples=selection.examples[1:],
        tokens_used=selection.tokens_used - first.tokens,
        note="cut to stay within the result cap",
    )


def select_examples(
    library: str | os.PathLike[str],
    input: str,
    budget: int = DEFAULT_EXAMPLES_BUDGET,
    k: int = DEFAULT_EXAMPLES_K,
    *,
    mmr_lambda: float = DEFAULT_MMR_LAMBDA,
    tokenizer: str = DEFAULT_TOKENIZER,
) -> ExampleSelection:
    """Load the library at ``library`` and choose examples for ``input`` (see the module)."""
    loaded = ExampleLibrary.load(library, tokenizer=tokenizer)
    return loaded.select(input, budget, k, mmr_lambda=mmr_lambda)


__all__ = [
    "DroppedExample",
    "Example",
    "ExampleLibrary",
    "ExampleSelection",
    "SelectedExample",
    "drop_least_relevant",
    "load_examples",
    "render",
    "render_example",
    "select_examples",
]
