"""Make an embedder by its registry name, set to embed long passages as an index asks."""

from __future__ import annotations

from typing import Any

from ctxselect.embed.base import EMBEDDERS, Embedder
from ctxselect.embed.windows import with_long_policy


def make_embedder(
    name: str, *, embed_long: str | None = None, model_id: str | None = None, **options: Any
) -> Embedder:
    """Build the embedder registered as ``name`` with ``options``.

    An embedder with a length limit (``minilm``: 256 word pieces) embeds only the start of
    a longer passage unless ``embed_long="windows"``: then the whole of it, as pooled
    windows (``embed/windows.py``). Embedders without a limit are unchanged.

    Args:
        name: The registry name.
        embed_long: ``truncate`` (the default: embed what fits) or ``windows``; an
            index's ``auto`` chooses between them from its chunks, so it is refused here.
        model_id: An index's recorded model id: the embedder is made to match it, so an
            index keeps embedding long passages the way it was built.
        **options: The factory's own keyword options (``device``, ``dim`` ...).

    Raises:
        UnknownNameError: ``name`` is not registered.
        MissingExtraError: The embedder needs an extra that is not installed.
        ConfigError: ``embed_long`` is not ``windows`` or ``truncate`` (``auto`` too).
    """
    made = EMBEDDERS.get(name)(**options)
    return with_long_policy(made, embed_long, model_id=model_id)
