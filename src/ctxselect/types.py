"""The values that flow between pipeline stages: documents, chunks, hits, selections.

All are frozen dataclasses; ``dataclasses.asdict`` of them is the JSON the CLI prints
(``docs/formats.md``). Offsets are first-class: ``document.text[chunk.start:chunk.end]
== chunk.text`` always holds, and a context header lives in its own field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ctxselect.reports import CompactReport as CompactReport
from ctxselect.reports import IndexInfo as IndexInfo
from ctxselect.reports import IndexReport as IndexReport
from ctxselect.reports import VerifyReport as VerifyReport
from ctxselect.reports import WriteResult as WriteResult

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True)
class Document:
    """One source document after loading and normalisation.

    Attributes:
        doc_id: Path relative to the indexed root (``/``-separated), or a BEIR ``_id``.
        text: The normalised text every chunk offset points into.
        title: A title kept apart from ``text`` (BEIR title, HTML <title>); may be empty.
        source: Where the document came from (file path, or ``file.jsonl:line``).
        content_hash: Hex SHA-256 of ``title`` and ``text``; unchanged hash, unchanged work.
            Left empty, ``add_documents`` computes one (over kind and fields too).
        kind: Loader that produced it: ``text``, ``markdown``, ``rst``, ``code``, ``html``,
            ``pdf``, ``beir``.
        fields: User metadata as ``(key, value)`` pairs, values as strings: a BEIR line's
            ``metadata`` object, a Markdown file's front matter, a code file's
            ``language``. ``--where key=value`` filters on them (docs/05-search-select.md).
    """

    doc_id: str
    text: str
    title: str = ""
    source: str = ""
    content_hash: str = ""
    kind: str = "text"
    fields: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Chunk:
    """A self-contained piece of one document.

    Attributes:
        chunk_id: ``f"{doc_id}#{ordinal}"``; unique within an index.
        doc_id: The document this chunk comes from.
        ordinal: Position of the chunk within its document, from 0.
        start: Offset of the first character in the document's text.
        end: Offset one past the last character; ``doc.text[start:end] == text``.
        text: The chunk's own text, exactly as in the document.
        header: Context that makes the chunk self-contained (document title, or the
            heading path "Guide > Install > Linux"); not part of ``text``.
        n_tokens: Tokens of ``text`` in the tokenizer the chunk was made with.
        parent_id: ``doc_id@start:end`` of the smallest enclosing section (markdown
            chunker; the whole document's span at top level), or "" for chunkers that
            know no sections.
    """

    chunk_id: str
    doc_id: str
    ordinal: int
    start: int
    end: int
    text: str
    header: str = ""
    n_tokens: int = 0
    parent_id: str = ""


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked search result: a chunk, its score and its rank (from 1).

    ``p_relevant`` is the calibrated probability that the chunk's document is relevant,
    when the index is calibrated for the mode (``ctxselect tune``); None otherwise.
    """

    rank: int
    chunk_id: str
    doc_id: str
    score: float
    start: int
    end: int
    n_tokens: int
    text: str
    header: str = ""
    p_relevant: float | None = None


@dataclass(frozen=True, slots=True)
class TermExplanation:
    """How one query term contributes to a chunk's score.

    ``form`` says how the term occurs in the chunk when the index splits identifiers:
    ``word``, ``identifier`` (a whole identifier with parts) or ``part of NAME``, several
    joined by ``"; "`` ("" when the index has no identifier parts or the term is absent).
    """

    term: str
    tf: float
    df: int
    idf: float
    contribution: float
    form: str = ""


@dataclass(frozen=True, slots=True)
class Explanation:
    """A score taken apart term by term; contributions add up to ``score``."""

    query: str
    chunk_id: str
    mode: str
    score: float
    terms: tuple[TermExplanation, ...]
    note: str = ""
    p_relevant: float | None = None


@dataclass(frozen=True, slots=True)
class SelectedChunk:
    """A piece of context in a selection: one chunk, or adjacent chunks merged.

    ``tokens`` is what this piece costs in the budget, framing included;
    ``n_tokens`` is the text alone. ``p_relevant``: the best calibrated P(relevant) of
    its chunks (None when the index is not calibrated for the mode).
    """

    chunk_ids: tuple[str, ...]
    doc_id: str
    start: int
    end: int
    text: str
    header: str
    score: float
    n_tokens: int
    tokens: int
    p_relevant: float | None = None


@dataclass(frozen=True, slots=True)
class DroppedChunk:
    """A ranked chunk the selection left out, and why."""

    chunk_id: str
    doc_id: str
    tokens: int
    reason: str


@dataclass(frozen=True, slots=True)
class Selection:
    """Chunks chosen to fit a token budget, in prompt order, with what was left out.

    ``tokens_used`` never exceeds ``budget``. ``note`` says why a selection is empty
    when it is. ``format`` is the framing the pieces were costed in; render with it.
    ``stop`` says why the selection stopped (``budget full``, ``no more matches``,
    ``next chunk below threshold: P 0.08 < 0.31``, ``score gap (uncalibrated): ...``);
    ``threshold`` is the P(relevant) threshold applied, if any.
    """

    chunks: tuple[SelectedChunk, ...]
    tokens_used: int
    budget: int
    dropped: tuple[DroppedChunk, ...] = ()
    packer: str = ""
    note: str = ""
    format: str = ""
    stop: str = ""
    threshold: float | None = None


@dataclass(frozen=True, slots=True)
class ChunkTable:
    """Column view of every chunk in an index, row ``i`` = i-th chunk in chunk_id order.

    Retrievers score rows and turn the best rows into :class:`Hit` values through this
    table, so a search never goes back to disk.
    """

    chunk_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    n_tokens: tuple[int, ...]
    texts: tuple[str, ...]
    headers: tuple[str, ...]
    row_of: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.row_of:
            self.row_of.update({cid: i for i, cid in enumerate(self.chunk_ids)})

    def __len__(self) -> int:
        return len(self.chunk_ids)

    @classmethod
    def from_chunks(cls, chunks: list[Chunk] | tuple[Chunk, ...]) -> ChunkTable:
        """Build a table from chunks, sorted by ``chunk_id`` so ties break reproducibly."""
        rows = sorted(chunks, key=lambda c: c.chunk_id)
        return cls(
            chunk_ids=tuple(c.chunk_id for c in rows),
            doc_ids=tuple(c.doc_id for c in rows),
            starts=tuple(c.start for c in rows),
            ends=tuple(c.end for c in rows),
            n_tokens=tuple(c.n_tokens for c in rows),
            texts=tuple(c.text for c in rows),
            headers=tuple(c.header for c in rows),
        )

    def hit(self, row: int, rank: int, score: float) -> Hit:
        """Make the Hit for ``row`` at ``rank`` with ``score``."""
        return Hit(
            rank,
            self.chunk_ids[row],
            self.doc_ids[row],
            score,
            self.starts[row],
            self.ends[row],
            self.n_tokens[row],
            self.texts[row],
            self.headers[row],
        )

    def indexed_text(self, row: int) -> str:
        """The text a keyword index sees for ``row``: header, then chunk text."""
        header = self.headers[row]
        return f"{header}\n{self.texts[row]}" if header else self.texts[row]


Qrels = dict[str, dict[str, int]]
"""qid -> {doc_id: grade}; grade >= 1 means relevant (trec_eval's convention)."""

Run = dict[str, dict[str, float]]
"""qid -> {doc_id or chunk_id: score}; higher is better."""


class Rows(Protocol):
    """What a retriever reads of the chunks it ranks: :class:`ChunkTable` is one.

    Row ``i`` is the i-th row of the retriever's arrays. A store may serve rows lazily
    (texts read by row id on demand) so a large index need not hold every text in memory.
    """

    @property
    def chunk_ids(self) -> Sequence[str]:
        """Chunk id of every row."""
        ...

    @property
    def row_of(self) -> Mapping[str, int]:
        """Row of every chunk id (ids of deleted rows are absent)."""
        ...

    def __len__(self) -> int:
        """Return the number of rows."""
        ...

    def hit(self, row: int, rank: int, score: float) -> Hit:
        """Make the Hit for ``row`` at ``rank`` with ``score``."""
        ...


@dataclass(frozen=True, slots=True)
class Segments:
    """One retrieval mode's stored keyword index: a base segment plus the changes since.

    Rows are global: the base's rows first (chunk_id order when it was written), then
    each delta's rows in order. A search over these equals a rebuild once compacted
    (no deltas, nothing dead); see docs/12-updates.md for what differs before.

    Attributes:
        base: The arrays the mode's retriever wrote (its ``arrays()``) at the last
            compaction or full build.
        deltas: Raw postings of the rows added since, one mapping per delta segment:
            ``vocab``, ``indptr``, ``rows`` (local), ``tfs``, ``lengths``. No weights:
            they are computed when loaded, with the statistics of the live rows.
        dead: Global rows deleted since the base was written (sorted int64), or None.
        dead_terms: Term -> number of deleted rows that hold it (keeps df exact).
    """

    base: Mapping[str, np.ndarray]
    deltas: tuple[Mapping[str, np.ndarray], ...] = ()
    dead: np.ndarray | None = None
    dead_terms: Mapping[str, int] = field(default_factory=dict)

    @property
    def compacted(self) -> bool:
        """True when the base alone is the index (no delta rows, no deleted rows)."""
        return not self.deltas and (self.dead is None or len(self.dead) == 0)


@dataclass(frozen=True, slots=True)
class Filter:
    """Which documents a search may return: applied inside retrieval, before the top k.

    A document passes when its doc_id matches an ``include`` glob (every one does without
    any), no ``exclude`` glob, and every ``where`` key: for each key, one of the values
    given for it (the same key twice means either value; different keys must all hold).

    Attributes:
        include: Gitignore globs over doc ids (``*.py``, ``docs/``, ``src/**/test_*``).
        exclude: Gitignore globs over doc ids; a match leaves the document out.
        where: ``(key, value)`` pairs over stored metadata: ``kind``, ``language``,
            ``path``, ``title`` and the user fields of each document.
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    where: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude or self.where)

    def describe(self) -> str:
        """The filter as the flags that make it: ``--include 'docs/' --where kind=code``."""
        parts = [f"--include {g!r}" for g in self.include]
        parts += [f"--exclude {g!r}" for g in self.exclude]
        parts += [f"--where {k}={v}" for k, v in self.where]
        return " ".join(parts)


def one_line(name: str) -> str:
    """``name`` (a doc id or path) with control characters escaped (a newline as ``\\n``),
    as every output prints names: it stays on its line, and unambiguous (a space would
    not be)."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)
