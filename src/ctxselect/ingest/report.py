"""What a load did: the documents, and a report of everything skipped and why."""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxselect.types import Document

_SHOWN_UNREADABLE = 10


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
            patterns, junk folders (``__pycache__``, ``node_modules``, virtualenvs), and
            folders already visited through a symlink.
        decoded_with_replacement: Documents loaded with invalid UTF-8 replaced by U+FFFD.
        unreadable: ``(path, reason)`` for each path that could not be read (permission
            denied, vanished during the scan, broken symlink, not a regular file).
    """

    loaded: int = 0
    binary: int = 0
    empty: int = 0
    too_large: int = 0
    unsupported: int = 0
    ignored: int = 0
    decoded_with_replacement: int = 0
    unreadable: tuple[tuple[str, str], ...] = ()

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
                (self.ignored, "ignored (hidden, .gitignore or junk folder)"),
            )
            if count
        ]
        if skipped:
            parts.append(f"Skipped: {', '.join(skipped)}.")
        if self.decoded_with_replacement:
            parts.append(
                f"{self.decoded_with_replacement:,} loaded with invalid UTF-8 replaced by U+FFFD."
            )
        if self.unreadable:
            shown = "; ".join(f"{p} ({why})" for p, why in self.unreadable[:_SHOWN_UNREADABLE])
            more = len(self.unreadable) - _SHOWN_UNREADABLE
            tail = f"; and {more:,} more" if more > 0 else ""
            parts.append(f"Could not read {len(self.unreadable):,}: {shown}{tail}.")
        return " ".join(parts)


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
        )
