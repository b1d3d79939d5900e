"""What the write and maintenance commands report: index runs, index info, compaction,
verification, and the MCP write tools' results.

Frozen dataclasses, like the values of :mod:`ctxselect.types` (which re-exports them);
``dataclasses.asdict`` of them is the JSON the CLI prints (``docs/formats.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What one ``index`` run did.

    ``skipped`` maps a reason (binary, empty, too_large, ...) to a count; ``unreadable``
    lists files that could not be read, with why. ``rebuilt`` says whether ranking
    artefacts were recomputed (False when nothing changed). ``unsupported_files`` names
    the files no loader handles, ``skipped_files`` gives ``(path, reason)`` for each file
    skipped as binary or too large; ``outside_links`` gives ``(link, target)`` for each
    symlink not followed because it leads outside the roots. ``token_fallbacks`` gives
    ``(path, reason)`` for each source file of this run the code chunker could not parse
    and cut by tokens instead (also counted in ``skipped`` as ``code_as_tokens``).
    ``replaced_files`` names the files (a BEIR record as ``path:line``) loaded with
    invalid UTF-8 replaced by U+FFFD (counted as ``decoded_with_replacement``);
    ``partial_files`` gives ``(path, reason)`` for each file loaded with part of it
    missing (PDF pages pypdf could not extract, left empty).
    """

    index: str
    added: int
    updated: int
    removed: int
    unchanged: int
    documents: int
    chunks: int
    rebuilt: bool
    seconds: float
    skipped: dict[str, int] = field(default_factory=dict)
    unreadable: tuple[tuple[str, str], ...] = ()
    note: str = ""
    renamed: int = 0
    compacted: bool = False
    delta_segments: int = 0
    generation: int = 0
    unsupported_files: tuple[str, ...] = ()
    outside_links: tuple[tuple[str, str], ...] = ()
    skipped_files: tuple[tuple[str, str], ...] = ()
    token_fallbacks: tuple[tuple[str, str], ...] = ()
    replaced_files: tuple[str, ...] = ()
    partial_files: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class IndexInfo:
    """What an index holds and how it was built."""

    index: str
    documents: int
    chunks: int
    tokens: int
    disk_bytes: int
    schema_version: int
    settings: dict[str, object]
    modes: tuple[str, ...]
    created: str
    updated: str
    generation: int = 0
    delta_segments: int = 0
    delta_rows: int = 0
    deleted_rows: int = 0
    compacted: str = ""
    avgdl_drift: float = 0.0
    fields: tuple[str, ...] = ()
    """The metadata keys ``--where`` can filter on: built-in ones, then user fields."""


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write tool did: the index run, and the document ids of the asked-for paths.

    ``missing`` lists asked-for paths that produced no document (ignored, binary,
    unsupported or empty files; the report counts why).
    """

    report: IndexReport
    paths: tuple[str, ...]
    doc_ids: tuple[str, ...]
    missing: tuple[str, ...]
    documents: int
    chunks: int
    note: str = ""


@dataclass(frozen=True, slots=True)
class CompactReport:
    """What one compaction did: segments merged into one base, deleted rows dropped."""

    index: str
    chunks: int
    merged_segments: int
    dropped_rows: int
    seconds: float
    note: str = ""


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The result of an integrity check; ``ok`` is False when ``problems`` is not empty.

    ``checks`` names what was checked; ``removed`` lists leftover files of an interrupted
    write that were deleted (they never belonged to a committed state).
    """

    index: str
    ok: bool
    checks: tuple[str, ...]
    problems: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
