"""Load files and folders as Documents: the entry point of the ingest stage.

Doc ids are paths relative to one base folder, ``/``-separated: a single folder root is
its own base, a single file's base is the folder holding it (its id is its name), and
several roots share their common parent folder so ids stay unique. BEIR corpus records
use their ``_id`` instead. See :mod:`ctxselect.ingest.walk` for the ignore rules (and
the symlink and file-name rules) and :mod:`ctxselect.ingest.text` for the normalisation
chunk offsets point into.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from typing import Any

from ctxselect.errors import ConfigError, InputError, MissingExtraError
from ctxselect.ingest.beir import load_beir
from ctxselect.ingest.fields import Fields, code_fields, front_matter
from ctxselect.ingest.kinds import SNIFF
from ctxselect.ingest.pdf import pdf_to_text
from ctxselect.ingest.report import EMPTY, NO_BODY_TEXT, IngestReport, IngestResult, Tally
from ctxselect.ingest.rescan import Listings, left_out
from ctxselect.ingest.text import content_hash, normalize, to_text
from ctxselect.ingest.walk import (
    Candidate,
    Scanner,
    describe_os_error,
    other_unicode_form,
    printable,
    valid_name,
)
from ctxselect.types import Document

DEFAULT_MAX_BYTES = 50_000_000

PathArg = str | os.PathLike[str]


def read_bytes(path: str) -> bytes:
    """Return the whole content of file ``path`` (one place, so tests can fail it)."""
    with open(path, "rb") as handle:
        return handle.read()


def load_paths(
    paths: PathArg | Iterable[PathArg],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: bool = False,
    follow_symlinks: bool = False,
    within: Sequence[PathArg] | None = None,
    skip: Sequence[PathArg] = (),
) -> IngestResult:
    """Load files, folders and BEIR corpora as normalised Documents sorted by ``doc_id``.

    Files that cannot be read are listed in the report while everything else loads;
    show ``result.report.summary()`` to the user. A symlink (to a file or a folder, a
    root included) whose resolved target lies outside ``within`` is not read but named
    in the report, unless ``follow_symlinks``. A file or folder whose name is not valid
    UTF-8 is skipped and named (as ``unreadable``, bad bytes shown as ``\\xff``): such a
    name cannot be stored as a document id; rename it to index it. A PDF that gives no
    text (no text layer, encrypted, broken, or pypdf not installed) is named in
    ``unreadable`` with the reason; binary and too-large files in ``skipped_files``.

    Args:
        paths: One path or several: files, folders, BEIR ``.jsonl`` corpora, or BEIR
            dataset folders (``corpus.jsonl`` beside ``queries.jsonl`` or ``qrels/``).
        max_bytes: Files larger than this are skipped (for BEIR corpora: records).
        progress: Show a tqdm progress bar on stderr (pass ``sys.stderr.isatty()``).
        follow_symlinks: Read through symlinks that lead outside ``within`` too.
        within: The folders (or files) symlinks must stay inside; default: ``paths``.
        skip: Folders never entered, whatever their name or the link leading to them
            (counted as ignored): the index being written, when it lies under a root.

    Returns:
        The documents and an :class:`IngestReport` of what was skipped and why.

    Raises:
        InputError: A root path does not exist or is not valid UTF-8, a ``.jsonl`` file
            is not a valid BEIR corpus, or two documents end up with the same ``doc_id``.
        ConfigError: ``max_bytes`` is not positive.
    """
    if max_bytes < 1:
        raise ConfigError(f"max_bytes must be a positive number of bytes, got {max_bytes}")
    roots = _check_roots(paths)
    tally = Tally()
    limits = roots if within is None else [os.fspath(p) for p in within]
    scanner = Scanner(
        tally,
        max_bytes,
        within=limits,
        follow_symlinks=follow_symlinks,
        skip=[os.fspath(p) for p in skip],
    )
    base = base_folder([os.path.abspath(r) for r in roots])
    # roots reached through a link come last: a folder is walked once, in its real place
    for root in sorted(roots, key=lambda r: os.path.realpath(r) != os.path.abspath(r)):
        _scan_root(scanner, root, base)
    scanner.finish()
    candidates = _dedupe(scanner.candidates)
    docs = _load_all(candidates, max_bytes, tally, progress)
    docs.sort(key=lambda d: d.doc_id)
    _check_unique(docs)
    return IngestResult(documents=tuple(docs), report=tally.freeze(len(docs)))


def _check_roots(paths: PathArg | Iterable[PathArg]) -> list[str]:
    """Return the roots as strings, without repeats; raise if one does not exist."""
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    roots = list(dict.fromkeys(os.fspath(p) for p in items))
    if not roots:
        raise InputError("no paths given: pass at least one file or folder to load")
    for root in roots:
        if not valid_name(os.path.abspath(root)):
            raise InputError(
                f"path '{printable(os.path.abspath(root))}' is not valid UTF-8, so it cannot "
                f"be stored in an index: rename it (or the folder it is in)"
            )
        other = None if os.path.exists(root) else other_unicode_form(root)
        if other is not None:
            raise InputError(
                f"path {root!r} does not exist, but {printable(other)!r} does: the same name "
                f"with its accents encoded another way (Unicode NFC vs NFD, e.g. a file made "
                f"on macOS); pass the name as it is on disk (tab completion gives it)"
            )
        if not os.path.exists(root):
            raise InputError(_missing_root(root))
    return roots


def _missing_root(root: str) -> str:
    """Why root ``root`` cannot be read: a dangling link, a link loop, or no such path."""
    if os.path.islink(root):
        what = "broken symlink"
        try:
            os.stat(root)
        except OSError as exc:
            what = describe_os_error(exc, symlink=True)  # or "symlink loop"
        target = os.readlink(root)
        return (
            f"path {root!r} is a {what} (it points to {target!r}): point the link at an "
            f"existing file or folder, or pass that file or folder itself"
        )
    return (
        f"path {root!r} does not exist: check the spelling, or run from the folder it is "
        f"relative to (current folder: {os.getcwd()})"
    )


def base_folder(abs_roots: Sequence[str]) -> str:
    """The folder doc ids are relative to: common parent of the roots (a file's is its folder)."""
    folders = [r if os.path.isdir(r) else os.path.dirname(r) for r in abs_roots]
    return os.path.commonpath(folders)


def _doc_id(abs_path: str, base: str) -> str:
    rel = os.path.relpath(abs_path, base)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _scan_root(scanner: Scanner, root: str, base: str) -> None:
    """Scan a folder root, or queue a file root (ignore rules do not apply to it)."""
    abs_root = os.path.abspath(root)
    if scanner.outside(root):
        return
    if os.path.isdir(root):
        prefix = _doc_id(abs_root, base)
        scanner.scan_dir(root, prefix + "/" if prefix else "")
        return
    try:
        st = os.stat(root)
    except OSError as exc:
        scanner.tally.unreadable.append((root, describe_os_error(exc)))
        return
    if stat.S_ISREG(st.st_mode):
        scanner.add_file(root, _doc_id(abs_root, base), st.st_size, explicit=True)
    else:
        scanner.tally.unreadable.append((root, "not a regular file"))


def _dedupe(candidates: list[Candidate]) -> list[Candidate]:
    """Drop a file reached twice under the same id (nested roots); keep real clashes."""
    seen: dict[str, str] = {}
    kept = []
    for cand in candidates:
        real = os.path.realpath(cand.path)
        if seen.get(cand.doc_id) == real:
            continue
        seen.setdefault(cand.doc_id, real)
        kept.append(cand)
    return kept


def _load_all(
    candidates: list[Candidate], max_bytes: int, tally: Tally, progress: bool
) -> list[Document]:
    """Load every candidate, collecting unreadable ones in the tally."""
    docs: list[Document] = []
    bar = _progress_bar(sum(c.size for c in candidates), progress)
    with bar as pbar:
        advance: Callable[[int], object] | None = pbar.update if pbar is not None else None
        for cand in candidates:
            try:
                if cand.kind == "beir":
                    docs.extend(
                        load_beir(
                            cand.path,
                            max_bytes=max_bytes,
                            tally=tally,
                            advance=advance,
                            strict=cand.explicit,
                        )
                    )
                    continue
                doc = _load_file(cand, max_bytes, tally)
            except OSError as exc:
                tally.unreadable.append((cand.path, describe_os_error(exc)))
                continue
            if doc is not None:
                docs.append(doc)
            if advance is not None:
                advance(cand.size)
    return docs


def _progress_bar(total: int, progress: bool) -> Any:
    if not progress:
        return nullcontext(None)
    from tqdm import tqdm

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc="ingest",
                file=sys.stderr)  # fmt: skip


def _load_file(cand: Candidate, max_bytes: int, tally: Tally) -> Document | None:
    """Read, sniff, decode and normalise one file; None if it is skipped (and counted)."""
    data = read_bytes(cand.path)
    if len(data) > max_bytes:  # grew after the scan
        tally.skip_too_large(cand.path, len(data), max_bytes, cand.doc_id)
        return None
    if cand.kind == "pdf":
        return _load_pdf(cand, data, tally)
    decoded = to_text(data, html=cand.kind == "html")
    if decoded is None:
        tally.skip_binary(cand.path)
        return None
    text, replaced = normalize(decoded[0]), decoded[1]
    kind = "text" if cand.kind == SNIFF else cand.kind
    title = ""
    if kind == "html":
        from ctxselect.ingest.html import html_to_text

        title, text = html_to_text(text)
    if not text.strip():
        html_only = kind == "html" and bool(data.strip())
        tally.skip_empty(cand.path, NO_BODY_TEXT if html_only else EMPTY, cand.doc_id)
        return None
    if replaced:
        tally.loaded_with_replacement(cand.path)
    return Document(
        doc_id=cand.doc_id,
        text=text,
        title=title,
        source=cand.path,
        content_hash=content_hash(title, text),
        kind=kind,
        fields=_fields(kind, cand.doc_id, text),
    )


def _fields(kind: str, doc_id: str, text: str) -> Fields:
    """The user metadata ``--where`` filters on: front matter, a code file's language."""
    if kind == "markdown":
        return front_matter(text)
    if kind == "code":
        return code_fields(doc_id)
    return ()


def _load_pdf(cand: Candidate, data: bytes, tally: Tally) -> Document | None:
    """Extract a PDF's text; name it in the report with the reason when that fails."""
    try:
        pdf = pdf_to_text(data)
    except (InputError, MissingExtraError) as exc:  # no text layer, encrypted, broken, no pypdf
        tally.unreadable.append((cand.path, str(exc)))
        return None
    text = pdf.text
    if pdf.failed_pages:
        tally.partial_files.append((cand.path, pdf.missing()))
    return Document(
        doc_id=cand.doc_id,
        text=text,
        source=cand.path,
        content_hash=content_hash("", text),
        kind="pdf",
    )


def keep_rescannable(
    documents: Sequence[Document],
    roots: Sequence[str],
    named: Sequence[str],
    loaded: IngestResult,
) -> tuple[list[Document], IngestResult]:
    """Keep the documents whose file a re-scan of the folder ``roots`` would load.

    ``add`` loads what it is given, hidden or ignored files included; the next ``index``
    re-scan walks the roots with the ignore rules and would remove them again. A file the
    user named (in ``named``, absolute) is refused; one met by walking a named folder is
    left out, as the re-scan would leave it out.

    Returns:
        The documents kept, and ``loaded`` (the load they came from) with each file left
        out added to its report's ``skipped_files``.

    Raises:
        InputError: Naming the first named file left out, the rule, and the fix.
    """
    wanted = {os.path.abspath(p) for p in named}
    listings: Listings = {}
    verdicts: dict[str, str] = {}
    kept: list[Document] = []
    for doc in documents:
        path = doc.source.rsplit(":", 1)[0] if doc.kind == "beir" else doc.source
        if path not in verdicts:
            verdicts[path] = left_out(path, roots, listings)
            if verdicts[path] and os.path.abspath(path) in wanted:
                raise InputError(
                    f"cannot add {path}: the next re-scan of the index's roots would leave "
                    f"it out and remove it again, so nothing was added: {verdicts[path]}"
                )
        if not verdicts[path]:
            kept.append(doc)
    left = sorted(
        (path, f"a re-scan leaves it out: {why}") for path, why in verdicts.items() if why
    )
    if not left:
        return kept, loaded
    skipped = (*loaded.report.skipped_files, *left)
    report = dataclasses.replace(loaded.report, skipped_files=skipped)
    return kept, dataclasses.replace(loaded, report=report)


def _check_unique(docs: list[Document]) -> None:
    """Raise InputError naming both sources if two documents share a doc_id (docs sorted)."""
    for prev, doc in itertools.pairwise(docs):
        if prev.doc_id == doc.doc_id:
            raise InputError(
                f"duplicate doc_id {doc.doc_id!r} from {prev.source} and {doc.source}: doc ids "
                f"must be unique; remove one of them or index them separately"
            )


__all__ = [
    "DEFAULT_MAX_BYTES",
    "IngestReport",
    "IngestResult",
    "base_folder",
    "keep_rescannable",
    "load_paths",
]
