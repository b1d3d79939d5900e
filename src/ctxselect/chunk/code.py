"""The ``code`` chunker: source files cut at definitions found by tree-sitter.

Each file is parsed with the grammar of its language (the per-language tree-sitter
wheels ship compiled grammars, so nothing downloads). A syntax node that fits ``size``
is a unit; a node above it is replaced by its children, recursively, so a long class is
cut between its methods and a long function between its statements. Consecutive units
of the same scope (the same enclosing definitions) are packed greedily up to ``size``.
A leaf still above ``size`` (a huge string literal) is cut by the recursive splitter.
Each chunk's header is the file, its scope path and line range:
``pkg/mod.py > class Parser > def feed (lines 40-88)``.

Files in a language without a grammar, and files the grammar cannot parse without
errors, are cut by the ``tokens`` chunker instead; :func:`code_language` and
:meth:`CodeChunker.fallback` say which and why.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import itertools
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ctxselect._require import require
from ctxselect.chunk.base import CHUNKERS
from ctxselect.chunk.code_grammars import DEFINITIONS, GRAMMARS, LEADING, WRAPPERS, label_of
from ctxselect.chunk.recursive import RecursiveSplitter
from ctxselect.chunk.sized import SizedChunker
from ctxselect.chunk.spans import (
    TINY_TOKENS,
    Row,
    count_up_to,
    has_text,
    longest_run,
    to_chunks,
    trim,
)
from ctxselect.chunk.tokens import TokenChunker
from ctxselect.config import DEFAULT_CHUNK_SIZE
from ctxselect.tokens.base import TokenCounter
from ctxselect.types import Chunk, Document

EXTRA = "code"
PATH_SEPARATOR = " > "
_SHOWN_LABELS = 3


def code_language(name: str) -> str | None:
    """Return the grammar module for a file ``name`` (``tree_sitter_python``...), or None."""
    dot = name.rfind(".")
    entry = GRAMMARS.get(name[dot:].lower()) if dot > 0 else None
    return entry[0] if entry else None


_PARSERS = threading.local()  # a tree-sitter Parser is not thread-safe: one per thread


@functools.cache
def _language(suffix: str) -> Any:
    """Return the tree-sitter language of ``suffix``'s grammar (loaded once)."""
    module, function = GRAMMARS[suffix]
    ts = require("tree_sitter", extra=EXTRA, feature="the code chunker")
    grammar = require(module, extra=EXTRA, feature=f"the code chunker for {suffix} files")
    return ts.Language(getattr(grammar, function)())


def _parser(suffix: str) -> Any:
    """Return this thread's parser for ``suffix``'s grammar."""
    parsers = _PARSERS.__dict__.setdefault("by_suffix", {})
    if suffix not in parsers:
        import tree_sitter

        parsers[suffix] = tree_sitter.Parser(_language(suffix))
    return parsers[suffix]


def available() -> bool:
    """Return True when tree-sitter (the ``code`` extra) is installed."""
    try:
        importlib.import_module("tree_sitter")
    except ImportError:
        return False
    return True


def parse(doc: Document) -> tuple[Any, str]:
    """Return ``doc``'s syntax tree and "", or None and why it cannot be parsed."""
    suffix = _suffix(doc.doc_id)
    if suffix not in GRAMMARS:
        return None, f"no grammar for {suffix or 'files without an extension'}"
    tree = _parser(suffix).parse(doc.text.encode("utf-8"))
    if tree.root_node.has_error:
        line = _first_error_line(tree.root_node)
        return None, f"the {suffix} grammar found a syntax error near line {line}"
    return tree, ""


def token_fallbacks(documents: Iterable[Document], chunker: str) -> list[tuple[str, str]]:
    """Return ``(doc_id, why)`` of each source file ``chunker`` meant to cut as code but
    cut by tokens: files a grammar fails to parse (and, for ``code``, files without one).

    ``auto`` cuts files without a grammar by tokens by design; they are not listed.
    """
    if chunker not in ("auto", "code") or not available():
        return []
    out = []
    for doc in documents:
        if doc.kind != "code" or (chunker == "auto" and not code_language(doc.doc_id)):
            continue
        why = parse(doc)[1] if has_text(doc.text, 0, len(doc.text)) else ""
        if why:
            out.append((doc.doc_id, why))
    return out


@dataclass(frozen=True, slots=True)
class _Unit:
    """A span of the file that fits the size, with the definitions it lies in."""

    start: int
    end: int
    n_tokens: int
    scope: tuple[str, ...]
    label: str = ""
    owner: int = -1


_Run = tuple[list[_Unit], int, tuple[str, ...]]
"""Units packed into one chunk, their exact tokens, and the scope its header names."""


def _char_offsets(text: str, data: bytes) -> list[int] | None:
    """Map UTF-8 byte offsets to character offsets (None when the text is ASCII)."""
    if len(data) == len(text):
        return None
    offsets = [0] * (len(data) + 1)
    at = 0
    for i, ch in enumerate(text):
        width = len(ch.encode("utf-8"))
        for j in range(width):
            offsets[at + j] = i
        at += width
    offsets[at] = len(text)
    return offsets


@CHUNKERS.register("code")
class CodeChunker(SizedChunker):
    """Cut source files at definitions; each chunk's header is its scope path and lines.

    Args:
        size: Maximum tokens of ``counter`` per chunk.
        overlap: Tokens repeated between chunks of the ``tokens`` fallback and of leaves
            cut by the recursive splitter.
        counter: The tokenizer; the default tokenizer when None.

    Raises:
        MissingExtraError: tree-sitter is not installed.
    """

    name = "code"
    # 2: same-line comments stay on their line, runs of <= 4 tokens join a neighbour,
    # text before the first node is kept, and the overlap is counted as one text; 3: the
    # splitter's and the tokens fallback's tiny pieces join the next one when they fit; 4:
    # a cut inside a word never splits a grapheme cluster (a letter and its accents); 5:
    # the shared splitter's: a line of invisible characters separates blocks, and an
    # overlap never starts inside a grapheme cluster
    layout = "5"

    def __init__(
        self,
        size: int = DEFAULT_CHUNK_SIZE,
        overlap: int = 0,
        counter: TokenCounter | None = None,
    ) -> None:
        require("tree_sitter", extra=EXTRA, feature="the code chunker (--chunker code)")
        super().__init__(size, overlap, counter)
        self.splitter = RecursiveSplitter(self.counter, size, overlap)
        self.tokens = TokenChunker(size, overlap, self.counter)

    def fallback(self, doc: Document) -> str:
        """Return why ``doc`` is cut by the ``tokens`` chunker, or "" when it is parsed."""
        return parse(doc)[1]

    def chunk(self, doc: Document) -> list[Chunk]:
        """Return the chunks of ``doc`` in document order.

        Raises:
            ConfigError: ``size`` is smaller than the tokens of a single character.
        """
        if not has_text(doc.text, 0, len(doc.text)):
            return []
        tree, why = parse(doc)
        if why:
            return self.tokens.chunk(doc)
        module = GRAMMARS[_suffix(doc.doc_id)][0]
        walk = _Walk(self, doc.text, DEFINITIONS[module])
        try:
            units = walk.units(tree.root_node, (), bounds=(0, len(doc.text)))
        except RecursionError:  # nesting deeper than Python's stack: cut it by tokens
            return self.tokens.chunk(doc)
        return to_chunks(doc, self._rows(doc, units))

    def _rows(self, doc: Document, units: list[_Unit]) -> Iterator[Row]:
        """Pack runs of units with the same scope up to ``size``; one row per run."""
        # line ends found once: counting them from the file's start for every chunk was
        # quadratic (30 s for a 1.25 MB minified file at size 7)
        breaks = [m.start() for m in re.finditer("\n", doc.text)]
        for run, n, scope in self._absorb_tiny(doc.text, self._runs(doc.text, units)):
            yield Row(run[0].start, run[-1].end, n, self._header(doc, run, scope, breaks))

    def _runs(self, text: str, units: list[_Unit]) -> list[_Run]:
        """Split ``units`` into the longest runs of one scope (and owner) that fit."""
        runs: list[_Run] = []
        i = 0
        while i < len(units):
            first, stop, total = units[i], i + 1, units[i].n_tokens
            while (
                stop < len(units)
                and (units[stop].scope, units[stop].owner) == (first.scope, first.owner)
                and total + units[stop].n_tokens <= self.size
            ):
                total += units[stop].n_tokens
                stop += 1
            stop, n = longest_run(self.counter, self.size, text, units, i, stop)
            runs.append((units[i:stop], n, first.scope))
            i = stop
        return runs

    def _absorb_tiny(self, text: str, runs: list[_Run]) -> list[_Run]:
        """Join each run of at most :data:`TINY_TOKENS` to a neighbour it fits with.

        An opener (``export class Circle {``, a line ending in ``{``, ``(``, ``[`` or ``:``)
        joins the run after it, anything else (a closing ``}``, a lone ``\"\"\"``) the
        run before it, and the other neighbour when that one is full. The joined run
        keeps the neighbour's scope.
        """
        out = list(runs)
        i = 0
        while i < len(out):
            run, n, _ = out[i]
            opener = text[run[-1].end - 1] in "{([:"
            for j in (i + 1, i - 1) if opener else (i - 1, i + 1):
                if n > TINY_TOKENS or not 0 <= j < len(out):
                    continue  # not tiny, or no neighbour on that side
                a, b = min(i, j), max(i, j)
                joined = out[a][0] + out[b][0]
                count = self.counter.count(text[joined[0].start : joined[-1].end])
                if count <= self.size:
                    out[a : b + 1] = [(joined, count, out[j][2])]
                    i = a - 1  # look at the joined run again (two tiny runs can join)
                    break
            i += 1
        return out

    def _header(
        self, doc: Document, run: list[_Unit], scope: tuple[str, ...], breaks: list[int]
    ) -> str:
        """Return ``path > scope > labels (lines a-b)``; ``breaks``: offsets of each "\\n"."""
        labels = [u.label for u in run if u.label and u.label != (scope[-1] if scope else "")]
        if len(labels) > _SHOWN_LABELS:
            labels = [*labels[:_SHOWN_LABELS], "..."]
        path = PATH_SEPARATOR.join([doc.doc_id, *scope])
        if labels:
            path += PATH_SEPARATOR + ", ".join(labels)
        first = bisect.bisect_left(breaks, run[0].start) + 1
        last = bisect.bisect_left(breaks, run[-1].end) + 1
        return f"{path} (lines {first}-{last})"


class _Walk:
    """One file's units: nodes that fit, and the children of nodes that do not."""

    def __init__(self, chunker: CodeChunker, text: str, definitions: dict[str, str]) -> None:
        self.chunker = chunker
        self.text = text
        self.data = text.encode("utf-8")
        self.chars = _char_offsets(text, self.data)
        self.definitions = definitions

    def span(self, node: Any) -> tuple[int, int]:
        a, b = node.start_byte, node.end_byte
        return (a, b) if self.chars is None else (self.chars[a], self.chars[b])

    def units(
        self,
        node: Any,
        scope: tuple[str, ...],
        inherited: str = "",
        bounds: tuple[int, int] | None = None,
    ) -> list[_Unit]:
        """Return the units of ``node``'s children, in order, covering all its text.

        ``inherited`` is the label of a wrapper being split (``export function f``): the
        definition inside it does not repeat the label in the scope. ``bounds`` widens the
        span covered (the root's: the whole file, so text before its first node, such as
        a zero-width space the parser skips, is in a chunk too).
        """
        groups = self._groups(node.children)
        first, last = bounds or self.span(node)
        # Text between children (a string's content around its escapes) joins the next.
        edges = [first] + [self.span(g[-1])[1] for g, _ in groups[:-1]] + [last]
        spans = [trim(self.text, a, b) for a, b in itertools.pairwise(edges)]
        counts = count_up_to(self.chunker.counter, self.chunker.size, self.text, spans)
        out: list[_Unit] = []
        for (group, main), (a, b), n in zip(groups, spans, counts, strict=True):
            if a == b:
                continue
            label = label_of(main, self.data, self.definitions)
            if n <= self.chunker.size:
                out.append(_Unit(a, b, n, scope, label))
                continue
            inner = scope + ((label,) if label and label != inherited else ())
            wrapper = label if main.type in WRAPPERS else ""
            owner = main.start_byte if len(inner) > len(scope) else -1
            out.extend(self._split(group, a, b, inner, wrapper, owner))
        return out

    def _split(
        self, group: list[Any], a: int, b: int, scope: tuple[str, ...], wrapper: str, owner: int
    ) -> list[_Unit]:
        """Units of ``text[a:b]`` (a group above the size): its nodes' children's units,
        and splitter pieces of leaves and of the text between nodes."""
        out: list[_Unit] = []
        pos = a
        for node in group:
            start, end = self.span(node)
            if node.child_count:
                out.extend(self._pieces(pos, start, scope))
                out.extend(self.units(node, scope, wrapper))
                pos = end
            else:
                out.extend(self._pieces(pos, end, scope))
                pos = end
        out.extend(self._pieces(pos, b, scope))
        if owner >= 0:  # units of one split definition pack only among themselves
            out = [
                _Unit(u.start, u.end, u.n_tokens, u.scope, u.label, owner) if u.owner < 0 else u
                for u in out
            ]
        return out

    def _pieces(self, a: int, b: int, scope: tuple[str, ...]) -> list[_Unit]:
        pieces = self.chunker.splitter.split(self.text, a, b)
        return [_Unit(p.start, p.end, p.n_tokens, scope) for p in pieces]

    @staticmethod
    def _groups(children: list[Any]) -> list[tuple[list[Any], Any]]:
        """Group comments, decorators and attributes with the node after them.

        Returns ``(nodes, main)`` pairs, ``main`` being the node that names the group;
        trailing comments join the group before them, and so does a comment on the line
        a node ends on (``x = 1  # why``): it explains that line, not the next.
        """
        groups: list[tuple[list[Any], Any]] = []
        pending: list[Any] = []
        for child in children:
            if not pending and groups and _same_line_comment(groups[-1][0][-1], child):
                groups[-1][0].append(child)
                continue
            pending.append(child)
            if not child.type.endswith(LEADING):
                groups.append((pending, child))
                pending = []
        if pending and groups:
            groups[-1][0].extend(pending)
        elif pending:
            groups.append((pending, pending[-1]))
        return groups


def _same_line_comment(before: Any, node: Any) -> bool:
    """Tell whether ``node`` is a comment starting on the line ``before`` ends on."""
    return "comment" in node.type and node.start_point[0] == before.end_point[0]


def _suffix(doc_id: str) -> str:
    name = doc_id.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


def _first_error_line(node: Any) -> int:
    """Return the 1-based line of the first ERROR or MISSING node under ``node``."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_error or current.is_missing:
            return int(current.start_point[0]) + 1
        stack.extend(reversed([c for c in current.children if c.has_error or c.is_missing]))
    return int(node.start_point[0]) + 1
