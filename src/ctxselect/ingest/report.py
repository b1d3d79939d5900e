"""What a load did: the documents, and a report of everything skipped and why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxselect.types import Document

_SHOWN_UNREADABLE = 10
_SHOWN_NAMES = 5
EMPTY = "empty or whitespace only"
NO_BODY_TEXT = (
    "an HTML page with no body text (scripts, styles and navigation are dropped), so "
    "there is nothing to chunk; if a script renders the page, save the rendered HTML"
)
_FIXES = {
    "binary": "a NUL byte or many control bytes in its first 8 KiB mean there is no text to "
    "chunk; pass a text file, or convert this one to text first",
    "too large": "split it into smaller files, or index it with a larger --max-bytes",
}


@dataclass(frozen=True, slots=True)
class IngestReport:
    """Counts of what :func:`load_paths` loaded and skipped.

    Attributes:
        loaded: Documents loaded (a BEIR corpus counts one per record).
        binary: Files skipped because their bytes look binary.
        empty: Files (or BEIR records) skipped because they are empty or whitespace-only.
        too_large: Files (or BEIR records) skipped for being above ``max_bytes``.
        unsupported: Files skipped because no loader handles their extension.
        ignored: Files and folders skipped by ignore rules: hidden names, ``.gitignore``
            and ``.ctxselectignore`` patterns, junk folders (``__pycache__``,
            ``node_modules``, virtualenvs), and folders already visited through a symlink.
        decoded_with_replacement: Documents loaded with invalid UTF-8 replaced by U+FFFD.
        replaced_files: The files counted in ``decoded_with_replacement``, sorted (a BEIR
            record as ``path:line``), so a user knows which ones to save as UTF-8.
        partial_files: ``(path, reason)`` for each file loaded with part of it missing
            (PDF pages whose text pypdf could not extract), sorted.
        empty_ids: The doc ids of the files counted in ``empty``, sorted: ``add`` removes
            the indexed version of a file that is now empty, as a re-scan does.
        unreadable: ``(path, reason)`` for each path that could not be read (permission
            denied, vanished during the scan, broken symlink, not a regular file, a name
            that is not valid UTF-8, shown with its bad bytes as ``\\xff`` escapes).
        unsupported_paths: The files counted in ``unsupported``, sorted.
        outside_links: ``(link, target)`` for each symlink not followed because its
            resolved target lies outside the roots (``follow_symlinks`` reads them).
        skipped_files: ``(path, reason)`` for each file counted in ``binary`` or
            ``too_large``, sorted, so a user can see which files were left out.
        empty_files: ``(path, reason)`` for each file counted in ``empty``, sorted: an
            empty or whitespace-only file, or an HTML page with no body text.
        too_large_ids: The doc ids of the files (and BEIR records) counted in
            ``too_large``, sorted: a re-scan keeps the indexed version of such a document
            rather than deleting it, since a lower limit is no reason to lose it.
    """

    loaded: int = 0
    binary: int = 0
    empty: int = 0
    too_large: int = 0
    unsupported: int = 0
    ignored: int = 0
    decoded_with_replacement: int = 0
    unreadable: tuple[tuple[str, str], ...] = ()
    unsupported_paths: tuple[str, ...] = ()
    outside_links: tuple[tuple[str, str], ...] = ()
    skipped_files: tuple[tuple[str, str], ...] = ()
    empty_files: tuple[tuple[str, str], ...] = ()
    too_large_ids: tuple[str, ...] = ()
    replaced_files: tuple[str, ...] = ()
    partial_files: tuple[tuple[str, str], ...] = ()
    empty_ids: tuple[str, ...] = ()

    def named_failure(self, paths: Sequence[str]) -> str:
        """Why one of ``paths`` (roots the user named) was not read, or "" if none failed."""
        for path, why in self.unreadable:
            if path in paths:
                return f"{path}: {why}"
        for link, target in self.outside_links:
            if link in paths:
                return (
                    f"{link}: it is a symlink to {target}, outside the roots; pass "
                    f"--follow-symlinks (follow_symlinks=True) to read it"
                )
        return ""

    def skip_reason(self, path: str) -> str:
        """Why the one file ``path`` a user named gave no document, with the fix.

        "" when it loaded, or when it is empty or whitespace only (nothing to fix: a caller
        says so). Covers what :meth:`named_failure` does, and files skipped as binary, too
        large, of an unsupported type, or HTML without body text.
        """
        failure = self.named_failure([path])
        if failure:
            return failure
        for name, why in self.skipped_files:
            if name == path:
                fix = _FIXES.get(why.split(":")[0])
                return f"{path}: {why}; {fix}" if fix else f"{path}: {why}"
        if path in self.unsupported_paths:
            suffix = path.rsplit("/", 1)[-1].rpartition(".")[2].lower()
            return (
                f"{path}: no loader handles .{suffix} files, so it has no text to chunk; "
                f"rename it with a supported extension (.txt for plain text, .md for "
                f"Markdown; docs/02-ingest.md lists them all)"
            )
        for name, why in self.empty_files:
            if name == path and why != EMPTY:
                return f"{path}: {why}"
        return ""

    def summary(self) -> str:
        """Describe the load in one paragraph of plain English, naming unreadable paths."""
        noun = "document" if self.loaded == 1 else "documents"
        parts = [f"Loaded {self.loaded:,} {noun}."]
        skipped = [
            f"{count:,} {label}"
            for count, label in (
                (self.binary, "binary"),
                (self.empty, "empty"),
                (self.too_large, "too large"),
                (self.unsupported, "unsupported type"),
                (self.ignored, "ignored (hidden, ignore-file pattern or junk folder)"),
            )
            if count
        ]
        if skipped:
            parts.append(f"Skipped: {', '.join(skipped)}.")
        if self.unsupported_paths:
            parts.append(f"Unsupported: {first_few(self.unsupported_paths)}.")
        if self.skipped_files:
            named = [f"{path} ({why})" for path, why in self.skipped_files]
            parts.append(f"Skipped files: {first_few(named)}.")
        if self.outside_links:
            links = first_few([f"{link} -> {target}" for link, target in self.outside_links])
            parts.append(
                f"Not followed: {len(self.outside_links):,} symlink(s) leading outside the "
                f"roots ({links}); pass follow_symlinks=True to read them."
            )
        if self.decoded_with_replacement:
            parts.append(
                f"{self.decoded_with_replacement:,} loaded with invalid UTF-8 replaced by "
                f"U+FFFD: {first_few(self.replaced_files)}."
            )
        if self.partial_files:
            named = [f"{path} ({why})" for path, why in self.partial_files]
            parts.append(f"Partly read: {first_few(named)}.")
        if self.unreadable:
            shown = "; ".join(f"{p} ({why})" for p, why in self.unreadable[:_SHOWN_UNREADABLE])
            more = len(self.unreadable) - _SHOWN_UNREADABLE
            tail = f"; and {more:,} more" if more > 0 else ""
            parts.append(f"Could not read {len(self.unreadable):,}: {shown}{tail}.")
        return " ".join(parts)


def first_few(items: Sequence[str], shown: int = _SHOWN_NAMES) -> str:
    """Join the first ``shown`` items with commas, saying how many more there are."""
    more = len(items) - shown
    return ", ".join(items[:shown]) + (f" and {more:,} more" if more > 0 else "")


@dataclass(frozen=True, slots=True)
class IngestResult:
    """Documents sorted by ``doc_id``, and the report of the load that made them."""

    documents: tuple[Document, ...]
    report: IngestReport


@dataclass(slots=True)
class Tally:
    """Mutable counters filled while loading, frozen into an :class:`IngestReport`."""

    binary: int = 0
    empty: int = 0
    too_large: int = 0
    unsupported: int = 0
    ignored: int = 0
    decoded_with_replacement: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    unsupported_paths: list[str] = field(default_factory=list)
    outside_links: list[tuple[str, str]] = field(default_factory=list)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)
    empty_files: list[tuple[str, str]] = field(default_factory=list)
    too_large_ids: list[str] = field(default_factory=list)
    replaced_files: list[str] = field(default_factory=list)
    partial_files: list[tuple[str, str]] = field(default_factory=list)
    empty_ids: list[str] = field(default_factory=list)

    def loaded_with_replacement(self, name: str) -> None:
        """Count and name a document loaded with invalid UTF-8 replaced by U+FFFD."""
        self.decoded_with_replacement += 1
        self.replaced_files.append(name)

    def skip_empty(self, path: str, why: str = EMPTY, doc_id: str = "") -> None:
        """Count and name a file skipped for having no text (``why``: which way;
        ``doc_id``: the id it would have had, "" when unknown)."""
        self.empty += 1
        self.empty_files.append((path, why))
        if doc_id:
            self.empty_ids.append(doc_id)

    def skip_binary(self, path: str) -> None:
        """Count and name a file skipped because its bytes look binary."""
        self.binary += 1
        self.skipped_files.append((path, "binary"))

    def skip_too_large(self, path: str, size: int, max_bytes: int, doc_id: str = "") -> None:
        """Count and name a file skipped for being above ``max_bytes`` (``doc_id``: the id
        it would have had, "" when unknown)."""
        self.too_large += 1
        if doc_id:
            self.too_large_ids.append(doc_id)
        why = f"too large: {size:,} bytes > --max-bytes {max_bytes:,}"
        self.skipped_files.append((path, why))

    def freeze(self, loaded: int) -> IngestReport:
        """Return the immutable report, with ``loaded`` documents."""
        return IngestReport(
            loaded=loaded,
            binary=self.binary,
            empty=self.empty,
            too_large=self.too_large,
            unsupported=self.unsupported,
            ignored=self.ignored,
            decoded_with_replacement=self.decoded_with_replacement,
            unreadable=tuple(sorted(self.unreadable)),
            unsupported_paths=tuple(sorted(self.unsupported_paths)),
            outside_links=tuple(sorted(self.outside_links)),
            skipped_files=tuple(sorted(self.skipped_files)),
            empty_files=tuple(sorted(self.empty_files)),
            too_large_ids=tuple(sorted(self.too_large_ids)),
            replaced_files=tuple(sorted(self.replaced_files)),
            partial_files=tuple(sorted(self.partial_files)),
            empty_ids=tuple(sorted(self.empty_ids)),
        )
