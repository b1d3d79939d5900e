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
from collections.abc import Sequence

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
