"""The one-standard-error rule, for many candidates: the simplest whose deficit is noise.

Sources: Hastie, Tibshirani & Friedman, *The Elements of Statistical Learning*, 2nd ed.,
§7.10 (the one-SE rule); Westfall & Young, *Resampling-Based Multiple Testing*, 1993
(the noise of a maximum, by randomization).

Candidates are scored on the same queries (a table of shape (candidates, queries)). Walking
from the simplest candidate ``c``, the rule asks how far the best candidate leads ``c``, and
whether a lead that large arises by chance alone. The comparison is paired, query by query
(query difficulty dominates the spread of each candidate's scores and cancels in the
differences), and it accounts for the best being the *maximum* of many leads: with 70
settings, one of them leads a good setting by two SEs of noise on most small label sets.
The noise is measured by sign flips: if ``c`` were as good as every other candidate, each
query's differences ``table - table[c]`` would be as likely negated, so flipping all of a
query's differences together (keeping how candidates move together) draws the best lead
the noise alone produces. ``c`` is chosen when its observed lead is at most the Φ(1)
(84.13%) quantile of those draws: with two candidates that is the classic rule, one paired
SE; with many it is one SE of the maximum. Seeded: the same table gives the same choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ctxselect.errors import ConfigError

ONE_SE_QUANTILE = 0.8413447460685429  # Φ(1): a normal draw is below mean + 1 SD this often
DEFAULT_FLIPS = 2000


def best_lead_noise(diff: np.ndarray, flips: int = DEFAULT_FLIPS, seed: int = 0) -> float:
    """Return the one-SE quantile of the best mean lead that sign-flip noise produces.

    Args:
        diff: Per-query differences from the candidate tested, shape (candidates, queries).
        flips: Random sign patterns drawn.
        seed: Seed of the sign patterns.
    """
    n = diff.shape[1]
    signs = np.random.default_rng(seed).choice((-1.0, 1.0), size=(flips, n))
    best = (signs @ diff.T / n).max(axis=1)  # (flips,): the best lead in each draw
    return float(np.quantile(best, ONE_SE_QUANTILE))


def one_se_choice(
    table: np.ndarray,
    order: Sequence[int] | None = None,
    *,
    flips: int = DEFAULT_FLIPS,
    seed: int = 0,
) -> int:
    """Return the row the rule picks: the first in ``order`` whose deficit is within noise.

    Args:
        table: Scores, shape (candidates, queries), higher is better.
        order: Rows from simplest to most complex (default: row order). Rows left out are
            neither chosen nor compared with.
        flips: Random sign patterns drawn per candidate tested.
        seed: Seed of the sign patterns.

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
    for i in range(len(rows)):
        diff = sub - sub[i]
        lead = float(diff.mean(axis=1).max())
        if lead <= 1e-12 or lead <= best_lead_noise(diff, flips, seed):
            return rows[i]
    return rows[int(np.argmax(sub.mean(axis=1)))]  # not reached: the best leads itself by 0


__all__ = ["DEFAULT_FLIPS", "ONE_SE_QUANTILE", "best_lead_noise", "one_se_choice"]
