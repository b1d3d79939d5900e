"""The embedder a write records: the one named, given, or the index's own, and how it
embeds a chunk longer than its model reads (``embed_long``).

:func:`resolve_embedder` answers before the write's chunks are known. ``embed_long="auto"``
(the default of an index) keeps the policy an index records; for a dense side the index
does not have yet, from a named embedder with a length limit, :func:`decide_long` chooses
it from the chunks once they are cut: ``windows`` when most are code, else ``truncate``
(then the model id is the one an explicit ``truncate`` records: vectors are shared).
Writes with no chunks decide nothing: the first write that has chunks chooses.
The manifest keeps why (``embed_long_auto``, :func:`kept_auto`) for ``info``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxselect import embed as _embed
from ctxselect.api.modes import NO_EMBEDDER, EmbedderArg, embedder_spec
from ctxselect.config import DEFAULT_ANN_THRESHOLD
from ctxselect.embed.windows import (
    AUTO,
    LIMITS,
    AutoChoice,
    auto_policy,
    check_embed_long,
    with_long_policy,
)
from ctxselect.errors import ConfigError
from ctxselect.manifest import EmbedderSpec, Manifest
from ctxselect.types import Chunk


@dataclass(frozen=True, slots=True)
class EmbedderChoice:
    """The embedder a write records, as known before its chunks are.

    Attributes:
        spec: What the manifest will record (None: no vector modes).
        given: The embedder itself when one was named or given (else made on first use).
        auto: ``embed_long="auto"`` chooses the policy from this write's chunks
            (:func:`decide_long`): a named embedder with a length limit gives the index a
            new dense side. Until then ``spec`` and ``given`` truncate.
    """

    spec: EmbedderSpec | None
    given: _embed.Embedder | None = None
    auto: bool = False


def resolve_embedder(
    manifest: Manifest,
    embedder: EmbedderArg,
    ann_threshold: int | None,
    embed_long: str | None = None,
) -> EmbedderChoice:
    """The embedder spec the index will record, and the embedder if one was named or given.

    A named embedder is made now, so a model that changed with an upgrade of its package
    shows as a changed spec (and the index is re-embedded); without a name the index's
    own spec is kept and its model made only if something needs embedding. ``embed_long``
    ``windows`` or ``truncate`` remakes the named embedder, or the index's own, that way;
    ``auto`` (None too) keeps the policy the index records, and leaves it to
    :func:`decide_long` for an embedder the index does not have yet.

    Raises:
        ConfigError: ``ann_threshold`` or ``embed_long`` is not valid.
    """
    if ann_threshold is not None and (
        isinstance(ann_threshold, bool) or not isinstance(ann_threshold, int) or ann_threshold < 1
    ):
        raise ConfigError(f"ann_threshold must be a whole number >= 1, got {ann_threshold!r}")
    old = manifest.embedder
    dropped = isinstance(embedder, str) and embedder == NO_EMBEDDER
    policy, auto = check_embed_long(embed_long), False
    if policy != AUTO and not dropped:
        embedder = _long_policy(embedder, old, policy)
    elif embedder is None and old is not None and _undecided(manifest):
        auto, embedder = True, old.name  # no chunk has chosen yet: this write's may
    elif isinstance(embedder, str) and not dropped:
        auto, embedder = _auto_named(embedder, old, _undecided(manifest))
    if dropped or (embedder is None and old is None):
        if ann_threshold is not None and not dropped:
            raise ConfigError(
                "ann_threshold needs dense retrieval: give an embedder too "
                "(`ctxselect index --embedder minilm --ann-threshold N`)"
            )
        return EmbedderChoice(None)
    threshold = ann_threshold or (old.ann_threshold if old else DEFAULT_ANN_THRESHOLD)
    if embedder is None:  # the index's own (``old`` is set: the case of neither returned)
        return EmbedderChoice(dataclasses.replace(old, ann_threshold=threshold) if old else None)
    made = _embed.make_embedder(embedder) if isinstance(embedder, str) else embedder
    return EmbedderChoice(embedder_spec(made, threshold), made, auto)


def _long_policy(
    embedder: EmbedderArg, old: EmbedderSpec | None, embed_long: str
) -> _embed.Embedder:
    """The named embedder (or the index's own) made to embed long chunks as ``embed_long``."""
    name = embedder if isinstance(embedder, str) else old.name if old and not embedder else None
    if name is None:
        raise ConfigError(
            "embed_long needs an embedder named by string (`ctxselect index --embedder minilm "
            "--embed-long truncate`); an Embedder object embeds as it was made: make it with "
            "`make_embedder(name, embed_long=...)`"
        )
    return _embed.make_embedder(name, embed_long=embed_long)


def _auto_named(name: str, old: EmbedderSpec | None, undecided: bool) -> tuple[bool, EmbedderArg]:
    """``auto`` for an embedder named by string: the policy the index records for it (never
    chosen again, so vectors never mix), or whether this write's chunks choose one."""
    if old is not None and old.name == name and not undecided:
        return False, _embed.make_embedder(name, model_id=old.model_id)
    return name in LIMITS, name


def _undecided(manifest: Manifest) -> bool:
    """``auto`` chose from no chunk at all (an index whose first writes were empty): the
    first write with chunks chooses, as nothing was embedded that a new policy could mix
    with."""
    kept = AutoChoice.from_dict(manifest.embed_long_auto)
    old = manifest.embedder
    return kept is not None and kept.chunks == 0 and old is not None and kept.embedder == old.name


def decide_long(
    choice: EmbedderChoice, chunks: Sequence[Chunk], kinds: Mapping[str, str]
) -> tuple[EmbedderChoice, AutoChoice | None]:
    """Choose the policy ``choice`` leaves to ``auto``, from the chunks a write embeds.

    Args:
        choice: What :func:`resolve_embedder` returned; returned as it is, with None, when
            it leaves nothing to choose.
        chunks: Every chunk of the write (it builds the index's dense side whole).
        kinds: Document id -> the document's kind (``code``, ``markdown`` ...).

    Returns:
        The choice made (``windows`` when code chunks are the majority, else ``truncate``:
        then the spec is the one an explicit ``truncate`` records), and why.
    """
    if not choice.auto or choice.spec is None or choice.given is None:
        return choice, None
    code = sum(1 for c in chunks if kinds.get(c.doc_id) == "code")
    chosen = auto_policy(choice.spec.name, code, len(chunks))
    made = with_long_policy(choice.given, chosen.policy)
    return EmbedderChoice(embedder_spec(made, choice.spec.ann_threshold), made), chosen


def kept_auto(manifest: Manifest, dense: EmbedderSpec | None) -> dict[str, Any] | None:
    """The ``embed_long_auto`` record a write keeps: the index's, while its embedder is the
    one ``auto`` chose for (an explicit policy or another embedder drops it)."""
    kept = AutoChoice.from_dict(manifest.embed_long_auto)
    if kept is None or dense is None or not kept.holds_for(dense.name, dense.model_id):
        return None
    return kept.to_dict()


__all__ = ["EmbedderChoice", "decide_long", "kept_auto", "resolve_embedder"]
