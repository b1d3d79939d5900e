"""The grid of a sweep: chunker × size × mode × packer × budget × stop, from flags or TOML.

A grid file is TOML with these keys, every one optional (defaults below)::

    chunkers = ["tokens", "paragraph"]
    modes = ["bm25", "tfidf"]
    packers = ["skip"]
    budgets = [250, 500, 1000, 2000, 4000, 8000]
    stops = ["none"]              # "none" (fill), "auto", or P thresholds such as "0.3"
    tokenizer = "cl100k"
    format = "markdown"

    [sizes]                       # or: sizes = [128, 256, 512] for every chunker
    tokens = [128, 256, 512]      # tokens for token-based chunkers
    paragraph = [800, 1600, 3200] # characters for paragraph

Flags override the file key by key. Names are checked against the registries by the
facade, which knows them; this module checks shapes and numbers.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxselect.config import DEFAULT_MODE, check_budget_range
from ctxselect.errors import ConfigError, InputError
from ctxselect.eval._files import PathLike

DEFAULT_BUDGETS = (250, 500, 1000, 2000, 4000, 8000)
DEFAULT_SIZES = (128, 256, 512)
DEFAULT_PARAGRAPH_SIZES = (800, 1600, 3200)  # characters: the paragraph chunker's unit
GRID_KEYS = (
    "chunkers",
    "sizes",
    "modes",
    "packers",
    "budgets",
    "stops",
    "tokenizer",
    "format",
)


@dataclass(frozen=True, slots=True)
class SweepGrid:
    """The settings a sweep crosses.

    Attributes:
        chunkers: Chunker names.
        sizes: chunker -> chunk sizes (tokens; characters for ``paragraph``).
        modes: Retrieval modes.
        packers: Packer names.
        budgets: Token budgets, increasing.
        stops: Stopping rules of the selections (``none`` fills the budget; ``auto`` or
            a P threshold stop earlier; see :mod:`ctxselect.budget.stop`).
        tokenizer: Tokenizer of chunk sizes and budgets.
        format: Context framing the budgets are counted in.
    """

    chunkers: tuple[str, ...] = ("tokens",)
    sizes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    modes: tuple[str, ...] = (DEFAULT_MODE,)
    packers: tuple[str, ...] = ("skip",)
    budgets: tuple[int, ...] = DEFAULT_BUDGETS
    tokenizer: str = "cl100k"
    format: str = "markdown"
    stops: tuple[str, ...] = ("none",)

    def sizes_of(self, chunker: str) -> tuple[int, ...]:
        """The sizes swept for ``chunker`` (its default sizes when none were given)."""
        if chunker in self.sizes:
            return self.sizes[chunker]
        return DEFAULT_PARAGRAPH_SIZES if chunker == "paragraph" else DEFAULT_SIZES

    def chunkings(self) -> list[tuple[str, int]]:
        """Every (chunker, size) pair, in grid order."""
        return [(c, s) for c in self.chunkers for s in self.sizes_of(c)]

    def n_configurations(self) -> int:
        """Budget configurations: chunkings × modes × packers × budgets × stops."""
        per = len(self.modes) * len(self.packers) * len(self.budgets) * len(self.stops)
        return len(self.chunkings()) * per


def _names(value: object, key: str, where: str) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise ConfigError(f"{where}: {key} must be a list of names, got {value!r}")
    names = tuple(dict.fromkeys(i.strip() for i in items if i.strip()))
    if not names:
        raise ConfigError(f"{where}: {key} is empty: give at least one name")
    return names


def _stops(value: object, where: str) -> tuple[str, ...]:
    """Stop rules as strings (TOML may give numbers); the facade checks their values."""
    if isinstance(value, list | tuple):
        value = [str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
                 for v in value]  # fmt: skip
    return _names(value, "stops", where)


def _name(value: object, key: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or "," in value:
        raise ConfigError(f"{where}: {key} must be one name, got {value!r}")
    return value.strip()


def _numbers(value: object, key: str, where: str) -> tuple[int, ...]:
    if isinstance(value, str):
        try:
            value = [int(part) for part in value.split(",") if part.strip()]
        except ValueError:
            raise ConfigError(f"{where}: {key} must be whole numbers, got {value!r}") from None
    items = list(value) if isinstance(value, list | tuple) else None
    if items is None or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise ConfigError(f"{where}: {key} must be a list of whole numbers, got {value!r}")
    numbers = tuple(sorted({int(v) for v in items}))
    if not numbers or numbers[0] < 1:
        raise ConfigError(f"{where}: {key} must hold numbers >= 1, got {value!r}")
    return numbers


def _budgets(value: object, where: str) -> tuple[int, ...]:
    """Budgets, each in ``select``'s range (a smaller one measures selections never made)."""
    budgets = _numbers(value, "budgets", where)
    for budget in budgets:
        try:
            check_budget_range(budget)
        except ConfigError as exc:
            raise ConfigError(f"{where}: budgets: {exc}") from None
    return budgets


def _sizes(value: object, where: str) -> dict[str | None, tuple[int, ...]]:
    if isinstance(value, Mapping):
        return {str(k): _numbers(v, f"sizes.{k}", where) for k, v in value.items()}
    return {None: _numbers(value, "sizes", where)}


def parse_size_flags(values: Sequence[str]) -> dict[str | None, tuple[int, ...]]:
    """Parse ``--sizes`` values: ``128,256`` (every chunker) or ``paragraph:800,1600``.

    Raises:
        ConfigError: A value is not such a list.
    """
    out: dict[str | None, tuple[int, ...]] = {}
    for value in values:
        chunker, _, numbers = value.rpartition(":")
        out[chunker.strip() or None] = _numbers(numbers, "--sizes", "--sizes")
    return out


def read_grid_file(path: PathLike) -> dict[str, Any]:
    """Read a grid TOML file into its raw key -> value mapping (checked by :func:`make_grid`).

    Raises:
        InputError: The file is missing, unreadable or not TOML (line and column named).
        ConfigError: A key is not a grid key.
    """
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise InputError(f"grid file {str(path)!r} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"grid file {path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise InputError(f"cannot read grid file {str(path)!r}: {exc.strerror}") from None
    unknown = sorted(set(data) - set(GRID_KEYS))
    if unknown:
        raise ConfigError(
            f"grid file {path}: unknown key(s) {', '.join(unknown)}: valid keys are "
            f"{', '.join(GRID_KEYS)}"
        )
    return {"where": f"grid file {path}", **data}


def make_grid(
    file_values: Mapping[str, Any] | None = None,
    *,
    chunkers: Sequence[str] | str | None = None,
    sizes: Mapping[str | None, tuple[int, ...]] | None = None,
    modes: Sequence[str] | str | None = None,
    packers: Sequence[str] | str | None = None,
    budgets: Sequence[int] | None = None,
    tokenizer: str | None = None,
    format: str | None = None,
    stops: Sequence[str] | str | None = None,
) -> SweepGrid:
    """Build a grid: flags (keyword arguments) override the grid file, key by key.

    Names may be given as lists or comma-separated strings. Sizes given without a
    chunker apply to every chunker and replace the file's sizes; sizes for one chunker
    override the sizes of that chunker only.

    Raises:
        ConfigError: A list is empty, a number is < 1, a budget is below ``select``'s
            minimum, or sizes name a chunker that is not in the grid.
    """
    raw = dict(file_values or {})
    where = str(raw.pop("where", "flags"))
    base = SweepGrid()
    grid_chunkers = _names(chunkers or raw.get("chunkers", base.chunkers), "chunkers", where)
    size_map = _sizes(raw["sizes"], where) if "sizes" in raw else {}
    if sizes and None in sizes:
        size_map = {}  # sizes for every chunker replace the file's sizes entirely
    size_map.update(sizes or {})
    unknown = sorted(str(c) for c in size_map if c is not None and c not in grid_chunkers)
    if unknown:
        raise ConfigError(
            f"{where}: sizes given for chunker(s) {', '.join(unknown)} that the grid does "
            f"not sweep ({', '.join(grid_chunkers)}): add them to chunkers"
        )
    every = size_map.get(None)
    per_chunker = {c: size_map.get(c, every) for c in grid_chunkers}
    return SweepGrid(
        chunkers=grid_chunkers,
        sizes={c: s for c, s in per_chunker.items() if s is not None},
        modes=_names(modes or raw.get("modes", base.modes), "modes", where),
        packers=_names(packers or raw.get("packers", base.packers), "packers", where),
        budgets=_budgets(budgets or raw.get("budgets", base.budgets), where),
        tokenizer=_name(tokenizer or raw.get("tokenizer", base.tokenizer), "tokenizer", where),
        format=_name(format or raw.get("format", base.format), "format", where),
        stops=_stops(stops or raw.get("stops", base.stops), where),
    )
