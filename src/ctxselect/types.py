"""The values that flow between pipeline stages: documents, chunks, hits, selections.

All are frozen dataclasses; ``dataclasses.asdict`` of them is the JSON the CLI prints
(``docs/formats.md``). Offsets are first-class: ``document.text[chunk.start:chunk.end]
== chunk.text`` always holds, and a context header lives in its own field.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

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


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """A Markdown text's front matter: where its block ends and the fields it sets.

    Attributes:
        end: Offset just after the closing ``---``, ``...`` or ``+++`` line (and its line
            break); 0 when there is none.
        fields: The top-level ``key: value`` pairs, quotes and trailing comments removed.
    """

    end: int = 0
    fields: tuple[tuple[str, str], ...] = ()


_NO_FRONT_MATTER = FrontMatter()
MAX_FRONT_MATTER_LINES = 200
MAX_KEY_CHARS = 200
MAX_VALUE_CHARS = 2000
HIDDEN_CLASS = r"\p{Cf}\p{Default_Ignorable_Code_Point}"
"""Characters that show nothing and are not whitespace, as a ``regex`` character class:
format characters (Cf: U+FEFF BOM, U+200B ZERO WIDTH SPACE, U+2060 WORD JOINER, U+00AD
SOFT HYPHEN, bidi marks) and the rest of Unicode's Default_Ignorable_Code_Point set."""
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # a lone CR too: API text is not normalised
_YAML_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?$")
# blank, indented (nested values), a comment, a list item (a value of the key above), "k:v"
_YAML_OTHER = re.compile(r"^(\s*|\s.*|#.*|- .*|-|[A-Za-z_][\w.-]*\s*:.*)$")
_TOML_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*=\s*(.*)$")
# blank, indented, a comment, a [table] header, array items and closers, a quoted key
_TOML_OTHER = re.compile(r"^(\s*|\s.*|#.*|\[.*|[\]}\"'\d].*)$")
_MULTILINE_STRING = ('"""', "'''")
# opening line -> (closing lines, top-level key line, other allowed line)
_FENCES = {
    "---": (("---", "..."), _YAML_KEY, _YAML_OTHER),
    "+++": (("+++",), _TOML_KEY, _TOML_OTHER),
}


def read_front_matter(text: str) -> FrontMatter:
    """Read the front matter opening ``text``; the one reader ingest and chunkers share.

    A block is YAML front matter when a ``---`` first line is closed by ``---`` or ``...``,
    TOML front matter when a ``+++`` first line is closed by ``+++``, within
    :data:`MAX_FRONT_MATTER_LINES` lines; every line between must be YAML-like (``key:``,
    blank, indented, a ``#`` comment, a ``- `` item) or TOML-like (``key = value``, blank,
    indented, a comment, a ``[table]`` header, array items), and at least one must be a
    key. So a thematic break opening a document, then a ``# heading`` and ``- item``
    lines, then another break, is content, not metadata. Invisible characters before the
    first line (a BOM, a zero-width space: :data:`HIDDEN_CLASS`) are skipped, and a lone
    CR ends a line as LF and CRLF do, so text given to the API unnormalised reads as
    ingest reads the file. Values are kept as text (no YAML or TOML parser is a
    dependency); a key whose value is on following lines, or under a TOML ``[table]``,
    gives no field.
    """
    lines = _first_lines(text, _hidden_prefix(text), MAX_FRONT_MATTER_LINES + 2)
    fence = _FENCES.get(lines[0][0].rstrip()) if len(lines) >= 3 else None
    if fence is None:
        return _NO_FRONT_MATTER
    closers, key_line, other_line = fence
    keys = in_table = False
    found: dict[str, str] = {}
    for line, end in lines[1 : MAX_FRONT_MATTER_LINES + 1]:
        line = line.rstrip()
        if line in closers:
            return FrontMatter(end, tuple(found.items())) if keys else _NO_FRONT_MATTER
        match = key_line.match(line)
        if match is None:
            if not other_line.match(line):
                return _NO_FRONT_MATTER
            in_table = in_table or (key_line is _TOML_KEY and line.startswith("["))
            continue
        keys, value = True, _unquote((match.group(2) or "").strip())
        if value and not in_table and not _continued(value, key_line is _TOML_KEY):
            found[match.group(1)[:MAX_KEY_CHARS]] = value[:MAX_VALUE_CHARS]
    return _NO_FRONT_MATTER  # never closed: not front matter


def _continued(value: str, toml: bool) -> bool:
    """Tell whether ``value`` is a comment, or (TOML) opens a multi-line string or array."""
    opens = value.count("[") > value.count("]") or value.count("{") > value.count("}")
    return value[0] == "#" or (toml and (value.startswith(_MULTILINE_STRING) or opens))


@functools.cache
def _hidden_run() -> Any:
    import regex  # a core dependency that knows Unicode properties; imported on first use

    return regex.compile(rf"[{HIDDEN_CLASS}]*")


def _hidden_prefix(text: str) -> int:
    """Return the length of the run of :data:`HIDDEN_CLASS` characters opening ``text``."""
    return _hidden_run().match(text).end() if text[:1] > "\x7f" else 0


def _first_lines(text: str, start: int, limit: int) -> list[tuple[str, int]]:
    """Return up to ``limit`` lines from ``start``, each with the offset just after it."""
    lines: list[tuple[str, int]] = []
    for match in _LINE_BREAK.finditer(text, start):
        lines.append((text[start : match.start()], match.end()))
        start = match.end()
        if len(lines) == limit:
            return lines
    lines.append((text[start:], len(text)))
    return lines


def _unquote(value: str) -> str:
    quote = value[:1]
    if quote in ("'", '"'):
        if len(value) >= 2 and value[-1] == quote:
            return value[1:-1]
        close = value.find(quote, 1)  # a quoted value, then a trailing comment
        return value[1:close] if close > 0 and value[close + 1 :].lstrip()[:1] == "#" else value
    if " #" in value and value[0] not in "[{":  # a trailing comment
        value = value.split(" #", 1)[0].rstrip()
    return value
