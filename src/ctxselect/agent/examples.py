"""Few-shot examples under a token budget: relevant, mutually diverse, in a stable order.

A library is a JSONL file, one ``{"input": ..., "output": ...}`` object per line (other
keys are ignored). :meth:`ExampleLibrary.select` ranks the examples by BM25 of their
inputs against the new input, then picks greedily by maximal marginal relevance (MMR;
Carbonell & Goldstein, SIGIR 1998): each pick maximises
``λ · relevance − (1 − λ) · max similarity to the examples already picked``, where
relevance is the BM25 score over the best score and similarity is the cosine of the
inputs' tf-idf vectors over BM25's own terms (stemmed, stop words out; smoothed idf,
``retrieve.tfidf.TfidfVectors``). The picking is the MMR reranker's own
(``rerank.mmr.mmr_order``), told to set aside what does not fit. An example whose
rendered text does not fit the tokens left is skipped, so a smaller one may still come.
Ties go to the better rank, so to the earlier library line among equal BM25 scores;
MMR values within 1e-12 count as ties (see ``_TIE``). The prompt order is stable: least
relevant first, most relevant last, next to the new input (models weigh the nearest
examples most; Zhao et al., "Calibrate Before Use", ICML 2021).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ctxselect import api
from ctxselect import tokens as _tokens
from ctxselect.agent.limits import check_budget, check_k, check_query
from ctxselect.config import DEFAULT_MMR_LAMBDA, DEFAULT_TOKENIZER
from ctxselect.errors import ConfigError, InputError
from ctxselect.rerank.mmr import mmr_order
from ctxselect.retrieve.analyze import BM25Analyzer
from ctxselect.retrieve.bm25 import BM25Retriever
from ctxselect.retrieve.tfidf import TfidfVectors
from ctxselect.types import Chunk

DEFAULT_EXAMPLES_BUDGET = 1000
MIN_EXAMPLES_BUDGET = 20
DEFAULT_EXAMPLES_K = 4
MAX_EXAMPLES_K = 20
MAX_INPUT_CHARS = 8000
# MMR values this close tie and go to the better rank: values equal in exact arithmetic
# (duplicate inputs, inputs alike but for equally weighted terms) differ in the last bits
# with the order their float sums ran in, and that must not decide.
_TIE = 1e-12


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
        self._retriever = api.retriever_for(chunks, BM25Retriever.mode)
        self._vectors = TfidfVectors([e.input for e in self.examples], BM25Analyzer())

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
        picked, dropped = self._mmr(rows, [h.score for h in hits], budget, k, mmr_lambda)
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
        self, rows: list[int], scores: list[float], budget: int, k: int, lam: float
    ) -> tuple[list[int], list[DroppedExample]]:
        """Greedy MMR over ``rows`` (rank order), skipping examples that do not fit."""
        dropped: list[DroppedExample] = []
        left = budget

        def fits(i: int) -> bool:
            nonlocal left
            cost = self._costs[rows[i]]
            if cost > left:
                reason = f"does not fit: needs {cost} tokens, {left} left"
                dropped.append(DroppedExample(self.examples[rows[i]].line, cost, reason))
                return False
            left -= cost
            return True

        relevance = np.array(scores) / scores[0] if scores else np.zeros(0)
        candidates = np.array(rows, dtype=np.int64)
        picked, _ = mmr_order(
            relevance,
            lambda i: self._vectors.cosines(rows[i])[candidates],
            lam,
            k,
            fits,
            tie=_TIE,
        )
        return [rows[i] for i in picked], dropped

    def _selected(self, row: int, score: float) -> SelectedExample:
        e = self.examples[row]
        return SelectedExample(e.line, e.input, e.output, round(score, 4), self._costs[row])


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
