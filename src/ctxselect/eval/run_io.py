"""Read and write TREC run files: ``qid Q0 docid rank score tag`` per line.

trec_eval ignores the rank column: it re-sorts each query by score descending and
breaks ties on the docno *descending* (form_res_rels.c, ``comp_sim_docno``), while we
break ties on the id ascending; and it stores scores as single-precision C floats
(trec_format.h), so doubles closer than about 6e-8 relative tie there too. So that
trec_eval and pytrec_eval reproduce OUR ranking from a written file,
:func:`write_trec_run` writes scores that are strictly decreasing in single precision:
a score is written exactly unless it ties (in single precision) the one above it, in
which case it becomes the next single-precision value below that one (see
:func:`ranking.strictly_decreasing`). Scores stay meaningful for fusion or inspection,
untied ones are unchanged, and all are printed with ``repr`` so they read back bit
for bit. The rank column is our rank.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ctxselect.config import RUN_DEPTH
from ctxselect.errors import ConfigError, InputError
from ctxselect.eval._files import PathLike, line_error, read_lines
from ctxselect.eval.metrics import MetricSpec
from ctxselect.eval.qrels_io import check_token
from ctxselect.eval.ranking import rank, strictly_decreasing
from ctxselect.types import Run

DEFAULT_RUN_DEPTH = 1000
"""Documents (or chunks) per query in an eval run: trec_eval's convention, so MAP and
recall computed from a written run are the standard ones."""
_RUN_EXPECTED = "6 whitespace-separated fields 'qid Q0 docid rank score tag' (score a number)"


def read_trec_run(path: PathLike) -> Run:
    """Read a TREC run into qid -> {doc_id: score}; the rank column is checked, not used.

    Raises:
        InputError: A line does not have six fields with an integer rank and a finite
            number as score, or a document appears twice for one query.
    """
    run: Run = {}
    for number, line in read_lines(path, "run"):
        fields = line.split()
        score = _number(fields[4]) if len(fields) == 6 else None
        if score is None or not fields[3].lstrip("-").isdigit():
            raise line_error(path, number, _RUN_EXPECTED, line)
        qid, doc_id = fields[0], fields[2]
        scores = run.setdefault(qid, {})
        if doc_id in scores:
            raise InputError(
                f"{path!s}:{number}: document {doc_id!r} appears twice for query {qid!r}: "
                "a run lists each document once per query"
            )
        scores[doc_id] = score
    return run


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def write_trec_run(
    path: PathLike, run: Run, *, tag: str = "ctxselect", k: int | None = None
) -> None:
    """Write ``run`` as a TREC run whose score order is exactly our ranking.

    Queries are written in id order; within a query documents are ranked by score
    descending, ties by id ascending, and tied scores are nudged down by ulps so that
    trec_eval's own sort cannot reorder them (see the module docstring).

    Args:
        path: File to write (overwritten).
        run: qid -> {doc_id: score}, higher is better.
        tag: The run name in the last column.
        k: Write only each query's ``k`` best documents.

    Raises:
        InputError: An id or the tag is empty or holds whitespace, or a score is not
            finite.
    """
    check_token(tag, "run tag")
    lines: list[str] = []
    for qid in sorted(run):
        check_token(qid, "query id")
        ranked = rank(run[qid], qid, k)
        for doc_id, score in ranked:
            check_token(doc_id, "document id")
            if not math.isfinite(score):
                raise InputError(
                    f"score of {doc_id!r} for query {qid!r} is {score!r}: a TREC run "
                    "needs finite scores; use a low finite value or leave the document out"
                )
        written = strictly_decreasing(score for _, score in ranked)
        for position, ((doc_id, _), score) in enumerate(zip(ranked, written, strict=True), 1):
            lines.append(f"{qid} Q0 {doc_id} {position} {score!r} {tag}\n")
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(lines)


def check_not_input(
    path: PathLike,
    flag: str,
    inputs: Mapping[str, PathLike | None],
    *,
    folder: bool = False,
    walked: Callable[[Path], bool] | None = None,
) -> None:
    """Refuse to write ``path`` over one of a command's inputs, or inside a corpus folder.

    ``inputs`` maps each input's flag (``--corpus``, ``--queries``, ...) to its path (None
    when not given). ``folder``: ``path`` is a folder the command writes files into.
    ``walked`` tells whether a folder input is read whole (None: every one is); a BEIR
    dataset folder, read only for its corpus file, may hold outputs.

    Raises:
        InputError: ``path`` is an input file (writing would destroy it), or lies inside a
            corpus folder (the next run would index what was written there as documents).
    """
    target = Path(path).resolve()
    for name, given in inputs.items():
        if given is None:
            continue
        source = Path(given).resolve()
        if target == source and not source.is_dir():
            raise InputError(
                f"{flag} {path} is the {name} file: writing it would overwrite your input; "
                f"name another file"
            )
        inside = target == source or target.is_relative_to(source)
        # a hidden folder on the way (./.ctxselect/...) is one the corpus walk skips
        read = inside and not _hidden_below(target, source)
        if read and source.is_dir() and (walked is None or walked(source)):
            what = "folder" if folder else "file"
            raise InputError(
                f"{flag} {path} lies inside the {name} folder {given}: the next run would "
                f"read the {what} written there as part of the corpus; name a {what} "
                f"outside it"
            )


def _hidden_below(target: Path, folder: Path) -> bool:
    return any(part.startswith(".") for part in target.relative_to(folder).parts)


def prepare_output(
    path: PathLike,
    flag: str,
    inputs: Mapping[str, PathLike | None] | None = None,
    example: str = "run.trec",
    walked: Callable[[Path], bool] | None = None,
) -> None:
    """Make the folder of a file a command was told to write, or refuse the path: run
    before the work, so a long evaluation never ends unable to save its result.

    Args:
        path: The file to write.
        flag: Its flag, for the message.
        inputs: The command's inputs by flag (:func:`check_not_input`).
        example: A file name to suggest when ``path`` is a folder.
        walked: As for :func:`check_not_input`.

    Raises:
        InputError: ``path`` is a folder, is one of ``inputs``, lies inside a corpus
            folder, or its folder cannot be made.
    """
    target = Path(path)
    check_not_input(path, flag, inputs or {}, walked=walked)
    if target.is_dir():
        raise InputError(
            f"{flag} {target} is a folder: name a file to write, e.g. {target / example}"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot write {flag} {target}: its folder {target.parent} cannot be made "
            f"({exc.strerror or exc}): name a file in a folder you can write to"
        ) from None


def run_depth(depth: int | None, ranking: Sequence[MetricSpec]) -> int:
    """How deep an eval run goes: ``depth``, by default 1000 or the largest metric k.

    Raises:
        ConfigError: ``depth`` is not a whole number >= 1, or it is below the largest
            ``k`` of the ranking metrics (those would be computed on a cut-off run).
    """
    deepest = max((spec.k for spec in ranking), default=1)
    if depth is None:
        return max(DEFAULT_RUN_DEPTH, deepest)
    RUN_DEPTH.check(depth)
    if depth < deepest:
        worst = max(ranking, key=lambda spec: spec.k)
        raise ConfigError(
            f"run depth {depth} is shallower than {worst}: that metric would be computed on "
            f"a cut-off run; pass a depth of at least {deepest} (default {DEFAULT_RUN_DEPTH})"
        )
    return depth
