"""A sweep's ``results.jsonl``: one row per configuration and metric, reusable across runs.

Each row carries the configuration's key: a hash of its settings and of the content of
the corpus and the labels it was measured on. A later sweep with the same key finds the
row and does not measure that configuration again, so adding a grid value only measures
what is new; a changed corpus or label file changes every key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ctxselect.errors import InputError
from ctxselect.eval._files import PathLike, line_error, read_lines
from ctxselect.eval.budget_metrics import budget_metric_names
from ctxselect.eval.cost import CACHED_FACTOR, DEFAULT_TURNS
from ctxselect.eval.grid import SweepGrid
from ctxselect.types import Document, Qrels

RESULTS_FILE = "results.jsonl"
RESULTS_VERSION = 2
"""Bumped when a metric's definition changes, so rows measured before are not reused.

Every configuration key hashes it: rows of another version never match a key of this
one, so they are measured again and never mixed into a report. Version 2: ``recall@Bt``
is the fraction of relevant documents (spans) selected; version 1's ``recall@Bt`` (a
hit rate) is now ``hit@Bt``.
"""


@dataclass(frozen=True, slots=True)
class ResultRow:
    """One metric value of one configuration.

    Ranking metrics (``ndcg@10``) and chunk statistics (``mean-chunk-tokens``,
    ``top3-tokens``) depend on chunker, size and mode only: their ``packer`` and
    ``budget`` are None. Budget metrics (``recall@2000t``) belong to a full configuration,
    ``stop`` included (``none``: fill the budget; rows written before it existed are
    ``none``, as their selections were).
    """

    key: str
    dataset: str
    metric: str
    value: float
    chunker: str
    size: int
    mode: str
    packer: str | None
    budget: int | None
    level: str
    tokenizer: str
    format: str
    documents: int
    queries: int
    chunks: int
    corpus_hash: str
    labels_hash: str
    embedder: str = ""
    stop: str = "none"


_FIELDS = {f.name: f.type for f in dataclasses.fields(ResultRow)}
_EXPECTED = "a JSON object with the keys " + ", ".join(_FIELDS)
_OPTIONAL = {"embedder", "stop"}  # rows written before they existed lack them


def config_key(settings: Mapping[str, object]) -> str:
    """Hash a configuration's settings (JSON-able values) into a short stable key."""
    payload = json.dumps({**settings, "version": RESULTS_VERSION}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:20]


def content_hash(lines: Iterable[str]) -> str:
    """Hash text lines (given in a canonical order) into a hex digest."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()


def corpus_hash(documents: Iterable[Document]) -> str:
    """Hash a corpus by its documents' ids and content hashes (order does not matter)."""
    return content_hash(sorted(f"{d.doc_id}\t{d.content_hash}" for d in documents))


def labels_hash(queries: Mapping[str, str], qrels: Qrels, spans: Iterable[str] = ()) -> str:
    """Hash what a sweep is judged on: query texts, document grades and span lines."""
    lines = [f"q\t{qid}\t{queries[qid]}" for qid in sorted(queries)]
    lines += [f"r\t{q}\t{d}\t{g}" for q in sorted(qrels) for d, g in sorted(qrels[q].items())]
    lines += sorted(spans)
    return content_hash(lines)


Setting = tuple[str, int, str, str | None, int | None, str | None]
"""(chunker, size, mode, packer, budget, stop); the last three are None for ranking rows."""
STOP_FOLDS = 5
STOP_SEED = 0
STOP_CALIBRATION = {
    "folds": STOP_FOLDS,
    "seed": STOP_SEED,
    "turns": DEFAULT_TURNS,
    "cache_factor": CACHED_FACTOR,
}
"""How stop rules other than ``none`` were calibrated (out of sample); part of their keys."""


@dataclass(frozen=True, slots=True)
class ResultBook:
    """What every row of one sweep shares, and how its configurations are keyed.

    Attributes:
        dataset: The dataset's name.
        grid: The grid swept (tokenizer and format are part of every key).
        level: ``doc`` or ``chunk``.
        documents: Documents in the corpus.
        corpus_hash: Content hash of the corpus; ``labels_hash``: of queries and labels.
        extra: Further settings that change results (e.g. BM25 parameters).
        modes_extra: mode -> settings that change that mode's results only (the dense
            modes' ``embedder`` model id, hybrid's ``fusion``); keyword keys stay as they are.
    """

    dataset: str
    grid: SweepGrid
    level: str
    documents: int
    corpus_hash: str
    labels_hash: str
    extra: Mapping[str, object] = dataclasses.field(default_factory=dict)
    modes_extra: Mapping[str, Mapping[str, object]] = dataclasses.field(default_factory=dict)

    def key(self, setting: Setting) -> str:
        """The configuration key of a ranking or budget setting.

        ``stop`` enters the key only when it is not ``none``, so fill-to-budget rows keep
        the keys they had before stopping existed, and a row of one stop rule is never
        reused for another.
        """
        chunker, size, mode, packer, budget, stop = setting
        stopping = {} if stop in (None, "none") else {"stop": stop, "calibration": STOP_CALIBRATION}
        return config_key(
            {
                **stopping,
                "corpus": self.corpus_hash,
                "labels": self.labels_hash,
                "level": self.level,
                "tokenizer": self.grid.tokenizer,
                "format": self.grid.format,
                "extra": {**self.extra, **self.modes_extra.get(mode, {})},
                "chunker": chunker,
                "size": size,
                "mode": mode,
                "packer": packer,
                "budget": budget,
            }
        )

    def row(
        self, setting: Setting, metric: str, value: float, queries: int, chunks: int
    ) -> ResultRow:
        """One results row of ``setting``."""
        chunker, size, mode, packer, budget, stop = setting
        return ResultRow(
            self.key(setting),
            self.dataset,
            metric,
            float(value),
            chunker,
            size,
            mode,
            packer,
            budget,
            self.level,
            self.grid.tokenizer,
            self.grid.format,
            self.documents,
            queries,
            chunks,
            self.corpus_hash,
            self.labels_hash,
            str(self.modes_extra.get(mode, {}).get("embedder", "")),
            stop or "none",
        )

    def settings(self) -> list[Setting]:
        """Every ranking and budget setting of the grid, in grid order."""
        grid = self.grid
        out: list[Setting] = []
        for chunker, size in grid.chunkings():
            for mode in grid.modes:
                out.append((chunker, size, mode, None, None, None))
                out += [
                    (chunker, size, mode, p, b, s)
                    for s in grid.stops
                    for p in grid.packers
                    for b in grid.budgets
                ]
        return out

    def plan(
        self, ranking_names: Sequence[str], done: set[tuple[str, str]]
    ) -> dict[tuple[str, int, str], tuple[bool, list[tuple[str, int, str]]]]:
        """What is left to measure: (chunker, size, mode) -> (ranking?, [(packer, budget, stop)]).

        A setting is done when every metric it has is in ``done`` as (key, metric).
        """
        plan: dict[tuple[str, int, str], tuple[bool, list[tuple[str, int, str]]]] = {}
        for setting in self.settings():
            chunker, size, mode, packer, budget, stop = setting
            todo = plan.setdefault((chunker, size, mode), (False, []))[1]
            key = self.key(setting)
            if budget is None:
                if any((key, m) not in done for m in ranking_names):
                    plan[(chunker, size, mode)] = (True, todo)
            elif any((key, m) not in done for m in budget_metric_names(budget)):
                todo.append((str(packer), budget, str(stop)))
        return plan


def _row(path: PathLike, number: int, line: str) -> ResultRow:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        raise line_error(path, number, _EXPECTED, line) from None
    if not isinstance(record, dict) or not set(_FIELDS) - _OPTIONAL <= set(record) <= set(_FIELDS):
        raise line_error(path, number, _EXPECTED, line)
    value = record["value"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise line_error(path, number, "a finite number as value", line)
    return ResultRow(**record)


def read_results(path: PathLike) -> list[ResultRow]:
    """Read a results file; a missing file holds no rows.

    Raises:
        InputError: A line is not a result row (file and line named).
    """
    if not os.path.exists(path):
        return []
    return [_row(path, number, line) for number, line in read_lines(path, "results")]


def append_results(path: PathLike, rows: Sequence[ResultRow]) -> None:
    """Append rows to a results file, one JSON object per line, creating it if needed."""
    if not rows:
        return
    lines = [json.dumps(dataclasses.asdict(row), ensure_ascii=False) + "\n" for row in rows]
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.writelines(lines)
    except OSError as exc:
        raise InputError(f"cannot write results file {str(path)!r}: {exc.strerror}") from None
