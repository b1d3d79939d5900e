"""The lab's building blocks: labels that name documents, and the rows of its tables.

A lab query carries a *label* instead of qrels: a document id or its leading part,
such as a chapter number. :func:`label_matches` is the one rule that decides which
documents a label names; :func:`labels_to_qrels` turns labels into ordinary qrels so
every metric of :mod:`.metrics` applies. Rows render with :mod:`.tables`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from ctxselect.errors import ConfigError
from ctxselect.eval.queries_io import LabeledQuery
from ctxselect.types import Qrels

CHARS_PER_TOKEN = 4
"""The chapter's estimate: about 4 characters of English text per token."""


def label_matches(label: str, doc_id: str) -> bool:
    """Tell whether ``label`` names the document ``doc_id``.

    The rule, case-sensitive, on ``/``-separated doc ids:

    1. An empty label matches nothing; a label equal to the whole doc id matches it.
    2. A label without ``/`` is compared with the file name (the part of the doc id
       after its last ``/``): it matches when the file name starts with the label and
       the next character is not a letter or digit (``str.isalnum``), or there is none.
       So ``"02"`` matches ``"02-chunking.md"``, ``"docs/02-chunking.md"`` and
       ``"02.md"``, while ``"2"`` matches neither ``"02-x.md"`` nor ``"20-x.md"``, and
       ``"02"`` does not match ``"020-x.md"`` or ``"02b.md"``.
    3. A label with ``/`` is compared the same way with the whole doc id:
       ``"docs/02"`` matches ``"docs/02-chunking.md"`` but not ``"site/docs/02-a.md"``.
    """
    if not label:
        return False
    if label == doc_id:
        return True
    target = doc_id if "/" in label else doc_id.rsplit("/", 1)[-1]
    if not target.startswith(label):
        return False
    return len(target) == len(label) or not target[len(label)].isalnum()


def labels_to_qrels(items: Sequence[LabeledQuery], doc_ids: Iterable[str]) -> Qrels:
    """Turn labeled queries into qrels: every document a label matches gets grade 1.

    A query whose label matches no document gets an empty judgment set, so
    ``evaluate`` excludes it and counts it; :func:`unmatched_labels` names them.
    """
    ids = list(doc_ids)
    return {item.qid: {d: 1 for d in ids if label_matches(item.label, d)} for item in items}


def unmatched_labels(items: Sequence[LabeledQuery], doc_ids: Iterable[str]) -> list[LabeledQuery]:
    """Return the labeled queries whose label matches no document id."""
    ids = list(doc_ids)
    return [item for item in items if not any(label_matches(item.label, d) for d in ids)]


def estimate_tokens(chars: float) -> float:
    """Estimate tokens from characters with the chapter's chars / 4 rule."""
    return chars / CHARS_PER_TOKEN


def _count(correct: int, total: int, what: str) -> None:
    if total < 0 or not 0 <= correct <= total:
        raise ConfigError(f"{what} must be between 0 and the query count {total}, got {correct}")


@dataclass(frozen=True, slots=True)
class SizeSweepRow:
    """One chunk size of the size sweep: how many chunks, how often top-1 is right, cost.

    ``exact_tokens`` is False when the token columns are chars / 4 estimates; the
    table then marks them with ``~``.
    """

    chunk_chars: int
    chunks: int
    top1_correct: int
    n_queries: int
    tokens_per_chunk: float
    tokens_top3: float
    exact_tokens: bool = False

    COLUMNS: ClassVar[tuple[str, ...]] = (
        "chunk chars",
        "chunks",
        "top-1 correct",
        "~tok/chunk",
        "~tok for top-3",
    )

    def __post_init__(self) -> None:
        _count(self.top1_correct, self.n_queries, "top-1 correct")

    def headers(self) -> tuple[str, ...]:
        """Column headers; ``~`` marks estimated token columns."""
        return self.COLUMNS if not self.exact_tokens else tuple(h.lstrip("~") for h in self.COLUMNS)

    def cells(self) -> tuple[str, ...]:
        """The row's values as displayed."""
        return (
            str(self.chunk_chars),
            str(self.chunks),
            f"{self.top1_correct}/{self.n_queries}",
            f"{self.tokens_per_chunk:.0f}",
            f"{self.tokens_top3:.0f}",
        )


def size_sweep_row(
    chunk_chars: int,
    chunk_lengths: Sequence[int],
    top1_correct: int,
    n_queries: int,
    *,
    top3_lengths: Sequence[Sequence[int]] | None = None,
    unit: Literal["chars", "tokens"] = "chars",
) -> SizeSweepRow:
    """Build a size-sweep row from chunk lengths.

    Args:
        chunk_chars: The chunk size tried, in characters.
        chunk_lengths: Length of every chunk made at that size.
        top1_correct: Queries whose best chunk comes from the labeled document.
        n_queries: Queries asked.
        top3_lengths: Per query, the lengths of its three best chunks; without it the
            top-3 cost is ``min(3, chunks)`` average chunks.
        unit: ``"chars"`` (token columns estimated as chars / 4) or ``"tokens"``
            (lengths are exact token counts).

    Raises:
        ConfigError: ``unit`` is unknown or ``top1_correct`` exceeds ``n_queries``.
    """
    if unit not in ("chars", "tokens"):
        raise ConfigError(f"unit must be 'chars' or 'tokens', got {unit!r}")
    scale = estimate_tokens if unit == "chars" else float
    per_chunk = scale(sum(chunk_lengths) / len(chunk_lengths)) if chunk_lengths else 0.0
    if top3_lengths:
        top3 = sum(scale(sum(lengths[:3])) for lengths in top3_lengths) / len(top3_lengths)
    else:
        top3 = min(3, len(chunk_lengths)) * per_chunk
    return SizeSweepRow(
        chunk_chars, len(chunk_lengths), top1_correct, n_queries, per_chunk, top3, unit == "tokens"
    )


@dataclass(frozen=True, slots=True)
class BudgetRow:
    """One token budget: how often the answer made it into the context, at what size."""

    budget: int
    answer_in_context: int
    n_queries: int
    avg_chunks: float

    COLUMNS: ClassVar[tuple[str, ...]] = ("budget (tok)", "answer in context", "avg chunks")

    def __post_init__(self) -> None:
        _count(self.answer_in_context, self.n_queries, "answer in context")

    def headers(self) -> tuple[str, ...]:
        """Column headers."""
        return self.COLUMNS

    def cells(self) -> tuple[str, ...]:
        """The row's values as displayed."""
        return (
            str(self.budget),
            f"{self.answer_in_context}/{self.n_queries}",
            f"{self.avg_chunks:.1f}",
        )
