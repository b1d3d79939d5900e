"""Ranking metrics in the ``name@k`` language, each defined as trec_eval defines it.

Every metric takes the ranked ids of one query (best first, see :mod:`.ranking`), that
query's judgments ``{doc_id: grade}`` and the depth ``k``. A document is relevant when
its grade is >= 1 (trec_eval's default relevance level); graded gain is the grade.
Definitions follow trec_eval 9 (the measure named in brackets), so values agree with
``pytrec-eval-terrier`` to float precision on the same ranking:

- ``hit@k`` [success.k]: 1 if a relevant document is in the top k, else 0.
- ``precision@k`` [P.k]: relevant documents in the top k, divided by k (not by the
  number retrieved).
- ``recall@k`` [recall.k]: relevant documents in the top k / all relevant documents.
- ``mrr@k`` [recip_rank on the run cut to k]: 1 / rank of the first relevant document
  within the top k, else 0.
- ``ndcg@k`` [ndcg_cut.k]: DCG@k / IDCG@k with DCG = sum of grade_i / log2(i + 1) over
  ranks i = 1..k (Järvelin & Kekäläinen 2002, linear gain); the ideal ranking sorts ALL
  judged-relevant documents of the query by grade, whether retrieved or not.
- ``map@k`` [map_cut.k]: sum of precision@i over the ranks i <= k holding a relevant
  document, divided by the total number of relevant documents (not by min(k, R)).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ctxselect.errors import ConfigError
from ctxselect.registry import Registry

Judged = Mapping[str, int]
MetricFn = Callable[[Sequence[str], Judged, int], float]

METRICS: Registry[Callable[..., float]] = Registry("metric")
"""metric name (without ``@k``) -> ``fn(ranked_ids, judged, k) -> float``."""

RELEVANT = 1
"""Lowest grade that counts as relevant (trec_eval's ``-l`` default)."""

_NAME_AT_K = re.compile(r"^([a-z_]+)@([0-9]+)$")


def _relevant(judged: Judged, doc_id: str) -> bool:
    return judged.get(doc_id, 0) >= RELEVANT


def n_relevant(judged: Judged) -> int:
    """Count the judged documents with grade >= 1."""
    return sum(1 for grade in judged.values() if grade >= RELEVANT)


@METRICS.register("hit")
def hit_at_k(ranked: Sequence[str], judged: Judged, k: int) -> float:
    """Return 1.0 if a relevant document is in the top ``k``, else 0.0."""
    return 1.0 if any(_relevant(judged, d) for d in ranked[:k]) else 0.0


@METRICS.register("precision")
def precision_at_k(ranked: Sequence[str], judged: Judged, k: int) -> float:
    """Return the relevant documents in the top ``k`` divided by ``k``."""
    return sum(1 for d in ranked[:k] if _relevant(judged, d)) / k


@METRICS.register("recall")
def recall_at_k(ranked: Sequence[str], judged: Judged, k: int) -> float:
    """Return the share of all relevant documents found in the top ``k``."""
    total = n_relevant(judged)
    if total == 0:
        return 0.0
    return sum(1 for d in ranked[:k] if _relevant(judged, d)) / total


@METRICS.register("mrr")
def mrr_at_k(ranked: Sequence[str], judged: Judged, k: int) -> float:
    """Return 1 / rank of the first relevant document in the top ``k``, else 0.0."""
    for position, doc_id in enumerate(ranked[:k], start=1):
        if _relevant(judged, doc_id):
            return 1.0 / position
    return 0.0


@METRICS.register("ndcg")
def ndcg_at_k(ranked: Sequence[str], judged: Judged, k: int) -> float:
    """Return DCG@k over the ideal DCG@k, with the grade as gain (trec_eval ndcg_cut)."""
    dcg = 0.0
    for position, doc_id in enumerate(ranked[:k], start=1):
        grade = judged.get(doc_id, 0)
        if grade >= RELEVANT:
            dcg += grade / math.log2(position + 1)
    ideal = sorted((g for g in judged.values() if g >= RELEVANT), reverse=True)[:k]
    idcg = sum(grade / math.log2(position + 1) for position, grade in enumerate(ideal, 1))
    return dcg / idcg if idcg > 0 else 0.0


@METRICS.register("map")
def map_at_k(ranked: Sequence[str], judged: Judged, k: int) -> float:
    """Return average precision over the top ``k``, divided by ALL relevant documents."""
    total = n_relevant(judged)
    if total == 0:
        return 0.0
    found = 0
    precision_sum = 0.0
    for position, doc_id in enumerate(ranked[:k], start=1):
        if _relevant(judged, doc_id):
            found += 1
            precision_sum += found / position
    return precision_sum / total


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One parsed metric name: ``ndcg@10`` is ``MetricSpec("ndcg", 10)``."""

    name: str
    k: int

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"

    def compute(self, ranked: Sequence[str], judged: Judged) -> float:
        """Compute this metric for one query's ranked ids and judgments."""
        return METRICS.get(self.name)(ranked, judged, self.k)


def parse_metric(name: str) -> MetricSpec:
    """Parse and validate a metric name of the form ``name@k`` (``ndcg@10``).

    Raises:
        ConfigError: The name is not ``name@k``, ``name`` is not a known metric, or
            ``k`` is not a positive integer; the message lists the valid names.
    """
    text = name.strip().lower()
    match = _NAME_AT_K.match(text)
    valid = ", ".join(METRICS.names())
    hint = f"write name@k with name one of {valid} and k a positive integer, e.g. ndcg@10"
    if match is None:
        raise ConfigError(f"unknown metric {name!r}: {hint}")
    base, depth = match.group(1), int(match.group(2))
    if base not in METRICS.names():
        raise ConfigError(f"unknown metric {base!r} in {name!r}: {hint}")
    if depth < 1:
        raise ConfigError(f"metric {name!r} has depth k = {depth}: {hint}")
    return MetricSpec(base, depth)


def parse_metrics(names: Sequence[str] | str) -> tuple[MetricSpec, ...]:
    """Parse several metric names (a list, or one comma-separated string), keeping order.

    Raises:
        ConfigError: A name is invalid, or no name is given.
    """
    items = names.split(",") if isinstance(names, str) else list(names)
    specs = tuple(parse_metric(item) for item in items if item.strip())
    if not specs:
        raise ConfigError("no metric given: pass at least one name@k, e.g. ndcg@10")
    return tuple(dict.fromkeys(specs))
