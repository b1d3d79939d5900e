"""Before a write builds on the base file: is it whole? Cheap unless something suggests not.

A delta update, a merge of deltas or a compaction that says "already compact" commits a
manifest that still names the base file, so a damaged base would stay under a write that
reported success. Every such write first checks the file (:func:`base_problem`):

- it exists and is as long as its layout says (a ``stat``: catches a truncated copy);
- its size, modification and change times equal the ``stamp`` recorded when it was
  written: then it is the file that was written and checked, and is not read;
- otherwise (touched since, copied, or written before stamps existed) its CRC-32 is
  compared with the manifest's, reading it in full once per process
  (:func:`integrity.check_file`, ~0.1 s per 300 MB).

A rebuild (changed settings, a new index) writes a new base without reading the old one,
so it is never refused: it is how a damaged index is repaired.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ctxselect.errors import IndexCorruptError
from ctxselect.stores.embedded import integrity

STAMP_KEY = "stamp"


def stamp(path: Path) -> dict[str, int]:
    """What identifies the bytes of a file just written: size, mtime and ctime (ns)."""
    st = os.stat(path)
    return {"bytes": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}


def layout_end(base: Mapping[str, Any]) -> int:
    """The byte where the base file's last array ends (its length when written)."""
    end = 0
    for dtype, shape, offset in base["layout"].values():
        count = int(np.prod(shape)) if shape else 1
        end = max(end, int(offset) + count * np.dtype(dtype).itemsize)
    return end


def base_problem(folder: Path, base: Mapping[str, Any]) -> str | None:
    """Why the base file ``base`` names cannot be built on (None: it is whole)."""
    path = folder / str(base["file"])
    try:
        found = stamp(path)
    except FileNotFoundError:
        return "it is missing"
    except OSError as exc:
        return f"it cannot be read: {exc.strerror or exc}"
    try:
        end = layout_end(base)
    except (KeyError, TypeError, ValueError) as exc:
        return f"its layout in the manifest is invalid ({exc})"
    if found["bytes"] < end:
        return f"it is {found['bytes']} bytes long, but its arrays end at byte {end}"
    if base.get(STAMP_KEY) == found:
        return None  # the very file written (and checksummed from memory) at its commit
    try:
        integrity.check_file(folder, path, base.get("crc32"))
    except IndexCorruptError:
        return "its bytes do not match the checksum in the manifest"
    except OSError as exc:
        return f"it cannot be read: {exc.strerror or exc}"
    return None


def check_base(folder: Path, manifest: Mapping[str, Any]) -> None:
    """Refuse a write that would build on a damaged base file.

    Raises:
        IndexCorruptError: Naming the file, why, and the rebuild from the index's roots.
    """
    base = manifest.get("base")
    if not isinstance(base, dict):
        return  # nothing built yet: the write is a first build
    why = base_problem(folder, base)
    if why is None:
        return
    where = shlex.quote(str(folder))
    raise IndexCorruptError(
        f"{folder / str(base['file'])} is damaged ({why}), so nothing was written (a write "
        f"would build on it): rebuild it in place from the index's roots with `ctxselect "
        f"index --rebuild --index {where}` (cached vectors are reused)"
    )
