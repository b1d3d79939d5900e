"""What an opened index holds: counts, settings, modes, and chunks or documents by id.

:class:`InspectingReader` adds ``info``, ``modes``, ``roots`` and lookups by id to a
:class:`SearchingReader`; :class:`ctxselect.api.read.Index` builds selection on top of it.
"""

from __future__ import annotations

from ctxselect import retrieve as _retrieve
from ctxselect.api import filters as _filters
from ctxselect.api.searching import SearchingReader
from ctxselect.budget import calibration as _calibration
from ctxselect.embed.windows import AutoChoice, describe_long_policy
from ctxselect.retrieve.modes import MODES
from ctxselect.types import Chunk, Document, IndexInfo


class InspectingReader(SearchingReader):
    """A :class:`SearchingReader` that also reports what the index holds and how it was
    built, and returns chunks, documents and spans by id."""

    def get_chunk(self, chunk_id: str) -> Chunk:
        """Return one chunk by id."""
        return self.store.get_chunk(chunk_id)

    def get_document(self, doc_id: str) -> Document:
        """Return one document by id."""
        return self.store.get_document(doc_id)

    def info(self) -> IndexInfo:
        """Counts, size on disk and the settings the index was built with."""
        snap = self._snapshot()  # reloads the manifest if a newer generation committed
        counts = self.store.counts()
        manifest = self.settings
        settings = {
            **manifest.describe(),
            "calibration": _calibration.summary(manifest.calibration, manifest.scoring()),
            "stop_auto": _calibration.describe_auto(
                manifest.calibration, self.modes(), manifest.scoring()
            ),
        }
        if manifest.embedder is not None:  # how a chunk over the model's limit is embedded
            dense = manifest.embedder
            auto = AutoChoice.from_dict(manifest.embed_long_auto)  # why, if auto chose
            settings["embed_long"] = describe_long_policy(dense.name, dense.model_id, auto)
            measured = manifest.throughput  # the speed of the last write that embedded
            if measured is not None and measured.get("model_id") == dense.model_id:
                settings["throughput"] = measured
        drifting = [s.name for s in MODES if s.length_normalized and s.name in snap.segments]
        return IndexInfo(
            index=self.path,
            documents=counts["documents"],
            chunks=counts["chunks"],
            tokens=counts["tokens"],
            disk_bytes=self.store.disk_bytes(),
            schema_version=self.store.schema_version,
            settings=settings,
            modes=self.modes(),
            created=manifest.created,
            updated=manifest.updated,
            generation=snap.generation,
            delta_segments=len(manifest.state.segments),
            delta_rows=manifest.state.delta_rows,
            deleted_rows=manifest.state.dead_rows,
            compacted=manifest.compacted or manifest.created,
            avgdl_drift=max(
                (_retrieve.length_drift(snap.segments[m]) for m in drifting), default=0.0
            ),
            fields=tuple(dict.fromkeys([*_filters.BUILTIN_KEYS, *self.store.field_keys()])),
        )

    def modes(self) -> tuple[str, ...]:
        """The retrieval modes this index can search: those it stores, then each fusion
        whose parts it stores."""
        stored = self.settings.modes
        fused = [s.name for s in MODES if s.fuses and set(s.fuses) <= set(stored)]
        return (*stored, *(m for m in fused if m not in stored))

    def span_text(self, doc_id: str, start: int, end: int) -> str:
        """Return ``document.text[start:end]`` without loading the whole document."""
        return self.store.span_text(doc_id, start, end)

    @property
    def roots(self) -> list[str]:
        """The absolute paths the index was built from."""
        return list(self.settings.roots)
