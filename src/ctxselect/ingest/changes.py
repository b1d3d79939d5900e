"""Change detection: which documents are new, changed, gone or the same since last time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ctxselect.types import Document


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """Doc ids split by what happened to them, each tuple sorted.

    Attributes:
        added: Ids present now but not before.
        modified: Ids present in both whose ``content_hash`` differs.
        removed: Ids present before but not now.
        unchanged: Ids present in both with the same ``content_hash``.
    """

    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """True if anything was added, modified or removed (an index needs work)."""
        return bool(self.added or self.modified or self.removed)


def diff_documents(old_hashes: Mapping[str, str], docs: Sequence[Document]) -> ChangeSet:
    """Compare freshly loaded documents with the hashes an index stored last time.

    Args:
        old_hashes: ``doc_id -> content_hash`` from the previous run.
        docs: The documents loaded now (ids unique, as :func:`load_paths` guarantees).

    Returns:
        The :class:`ChangeSet`; re-indexing only ``added`` and ``modified`` and dropping
        ``removed`` reproduces a full rebuild.
    """
    added, modified, unchanged = [], [], []
    for doc in docs:
        old = old_hashes.get(doc.doc_id)
        if old is None:
            added.append(doc.doc_id)
        elif old == doc.content_hash:
            unchanged.append(doc.doc_id)
        else:
            modified.append(doc.doc_id)
    current = {doc.doc_id for doc in docs}
    removed = [doc_id for doc_id in old_hashes if doc_id not in current]
    return ChangeSet(
        added=tuple(sorted(added)),
        modified=tuple(sorted(modified)),
        removed=tuple(sorted(removed)),
        unchanged=tuple(sorted(unchanged)),
    )
