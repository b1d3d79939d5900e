"""The composition layer: the only package that composes the pipeline's stages.

``read`` (open an index: search, select, explain, info; ``generation`` keeps the
committed generation it reads current, ``filtered`` restricts it to a filter's rows,
``searching`` ranks and explains, ``inspecting`` gives info, chunks and documents),
``write`` (index, add, remove; ``write_options`` checks their options; ``sync`` is the
one write they all make, ``write_session`` opens an index for it and undoes a failed
first write), ``maintain`` (compact, verify), ``watch``,
``evaluate`` (with ``eval_scoring`` and ``lab``), ``sweep`` (with ``sweep_setup``),
``tune`` (fusion; ``fusion_candidates`` holds the grid) and ``calibrate`` (P(relevant)
and the stop threshold); ``modes`` holds the write-side operations of the mode table and
``selections`` the budgeted-selection blocks.
The CLI and the MCP server call these and nothing else. Write-side names load on first
use, so ``from ctxselect.api import open_index`` does not import the write path.
"""

from ctxselect._require import lazy
from ctxselect.api.read import DEFAULT_STOP, Index, check_stop, names, open_index, retriever_for

__getattr__ = lazy(
    __name__,
    {
        "DEFAULT_MAX_BYTES": "ctxselect.api.write",
        "add_documents": "ctxselect.api.write",
        "add_paths": "ctxselect.api.write",
        "build_index": "ctxselect.api.write",
        "chunk_file": "ctxselect.api.chunking",
        "compact_index": "ctxselect.api.maintain",
        "index_paths": "ctxselect.api.write",
        "load_project_config": "ctxselect.api.project",
        "remove_documents": "ctxselect.api.write",
        "verify_index": "ctxselect.api.maintain",
        "watch_paths": "ctxselect.api.watch",
    },
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_STOP",
    "Index",
    "add_documents",
    "add_paths",
    "build_index",
    "check_stop",
    "chunk_file",
    "compact_index",
    "index_paths",
    "load_project_config",
    "names",
    "open_index",
    "remove_documents",
    "retriever_for",
    "verify_index",
    "watch_paths",
]
