"""The one-standard-error rule: the simplest candidate within one paired SE of the best.

Source: Hastie, Tibshirani & Friedman, *The Elements of Statistical Learning*, 2nd ed., §7.10.

Candidates are scored on the same queries (a table of shape (candidates, queries)). The best
candidate has the highest mean. Every other candidate is compared with it query by query:
its standard error is that of the per-query differences, ``std(d, ddof=1) / sqrt(n)``. Query
difficulty dominates the spread of each candidate's own scores and cancels in the paired
differences, so this SE is much sharper than an unpaired one, or than one over a handful of
fold means (5 folds leave 4 degrees of freedom). The rule returns the earliest candidate, in
the order given (simplest first), whose mean lags the best by at most its SE; or, when a
simpler candidate lags less than that one (its own SE being smaller), the earliest such:
the rule never picks a candidate over a simpler one with a higher mean.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ctxselect.errors import ConfigError


def paired_se(table: np.ndarray, best: int) -> np.ndarray:
    """Return each row's standard error of its per-query difference from row ``best``.

    Args:
        table: Scores, shape (candidates, queries).
        best: The row every row is compared with.

    Returns:
        One SE per row: 0 for ``best`` itself, and for every row with fewer than 2 queries.
    """
    n = table.shape[1]
    if n < 2:
        return np.zeros(table.shape[0])
    diff = table[best][None, :] - table
    return np.asarray(diff.std(axis=1, ddof=1) / np.sqrt(n))


def one_se_choice(table: np.ndarray, order: Sequence[int] | None = None) -> int:
    """Return the row the rule picks: the first in ``order`` within one paired SE of the best.

    Args:
        table: Scores, shape (candidates, queries), higher is better.
        order: Rows from simplest to most complex (default: row order). Rows left out are
            neither chosen nor compared with: the best is the best of the rows listed.

    Raises:
        ConfigError: The table has no candidate or no query, or ``order`` is empty or names
            a row the table does not have.
    """
    table = np.asarray(table, dtype=float)
    if table.ndim != 2 or 0 in table.shape:
        raise ConfigError(
            f"the one-SE rule needs a (candidates, queries) table with at least one of each, "
            f"got shape {table.shape}"
        )
    rows = list(range(table.shape[0])) if order is None else [int(r) for r in order]
    if not rows or not all(0 <= r < table.shape[0] for r in rows):
        raise ConfigError(
            f"order must list rows 0 to {table.shape[0] - 1} of the score table, got {rows}"
        )
    sub = table[rows]
    means = sub.mean(axis=1)
    best = int(np.argmax(means))
    lag = means[best] - means
    first = int(np.flatnonzero(lag <= paired_se(sub, best) + 1e-12)[0])  # the best lags 0
    # A steady row can lag by more than its small SE while a noisy one, with a lower
    # mean, lags by less than its large one: a simpler row lagging no more than the pick
    # dominates it (simpler and at least as good on average), so it is taken instead.
    return rows[int(np.flatnonzero(lag[: first + 1] <= lag[first] + 1e-12)[0])]


__all__ = ["one_se_choice", "paired_se"]
