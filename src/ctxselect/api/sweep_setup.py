"""What a sweep crosses and where it writes: the checked grid and the results folder.

``sweep_grid`` builds a :class:`~ctxselect.eval.SweepGrid` from a TOML file and flags and
``check_grid`` checks its names against the registries; ``dataset_name`` and
``default_sweep_dir`` name a corpus and its results folder. :mod:`ctxselect.api.sweep`
re-exports them and runs the sweep.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from ctxselect import eval as _eval
from ctxselect.api.read import names
from ctxselect.budget import stop as _stop
from ctxselect.config import DEFAULT_INDEX_DIR, check_budget_range
from ctxselect.errors import UnknownNameError
from ctxselect.eval import SweepGrid


def dataset_name(corpus: str | os.PathLike[str]) -> str:
    """Name a dataset after its folder (``.../scifact/corpus.jsonl`` -> ``scifact``)."""
    path = Path(corpus).resolve()
    return path.parent.name if path.is_file() else path.name


def default_sweep_dir(corpus: str | os.PathLike[str]) -> str:
    """A results folder per corpus under ``./.ctxselect/sweeps``, so re-runs reuse it."""
    resolved = str(Path(corpus).resolve())
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:10]
    return os.path.join(DEFAULT_INDEX_DIR, "sweeps", f"{dataset_name(corpus)}-{digest}")


def sweep_grid(
    grid_file: str | os.PathLike[str] | None = None,
    *,
    chunkers: Sequence[str] | str | None = None,
    sizes: Sequence[str] = (),
    modes: Sequence[str] | str | None = None,
    packers: Sequence[str] | str | None = None,
    budgets: Sequence[int] | None = None,
    tokenizer: str | None = None,
    format: str | None = None,
    stops: Sequence[str] | str | None = None,
) -> SweepGrid:
    """Build a grid from a TOML file and flags (flags win, key by key).

    ``sizes`` holds flag values such as ``"128,256"`` (every chunker) or
    ``"paragraph:800,1600"`` (one chunker). Names are checked against the registries;
    ``stops`` (``none``, ``auto``, P thresholds) against :func:`ctxselect.budget.check_stop`.

    Raises:
        InputError: The grid file is missing or not TOML.
        ConfigError, UnknownNameError: A value or name is invalid.
    """
    grid = _eval.make_grid(
        _eval.read_grid_file(grid_file) if grid_file else None,
        chunkers=chunkers,
        sizes=_eval.parse_size_flags(sizes) if sizes else None,
        modes=modes,
        packers=packers,
        budgets=budgets or None,
        tokenizer=tokenizer,
        format=format,
        stops=stops,
    )
    return check_grid(grid)


def check_grid(grid: SweepGrid) -> SweepGrid:
    """Check every name and budget of ``grid``; return it with its stop rules in canonical
    form. Budgets are checked as ``select`` checks its budget (:func:`check_budget_range`).

    Raises:
        UnknownNameError: A name is not registered.
        ConfigError: A budget is out of ``select``'s range, or a stop rule is invalid.
    """
    for kind, values in [
        ("chunker", grid.chunkers),
        ("mode", grid.modes),
        ("packer", grid.packers),
        ("tokenizer", [grid.tokenizer]),
        ("format", [grid.format]),
    ]:
        valid = names(kind)
        for value in values:
            if value not in valid:
                raise UnknownNameError(kind, value, valid)
    for budget in grid.budgets:
        check_budget_range(budget)  # select's range and words: a smaller one selects nothing
    rules = (_stop.check_stop(s) for s in grid.stops)
    stops = tuple(dict.fromkeys(r if isinstance(r, str) else f"{r:g}" for r in rules))
    return dataclasses.replace(grid, stops=stops)
