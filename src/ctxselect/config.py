"""Settings of every stage, their defaults, and the one place where precedence is decided.

Precedence, highest first: explicit argument (CLI flag or Python kwarg), environment
variable (``CTXSELECT_*``), the project config file (``ctxselect.toml``; the CLI only, see
``ctxselect.api.project``), the index manifest (read as ``ctxselect.manifest.Manifest``),
the default below.
"""

from __future__ import annotations

import math
import numbers
import operator
import os
from dataclasses import dataclass

from ctxselect.errors import ConfigError

DEFAULT_TOKENIZER = "cl100k"
DEFAULT_CHUNKER = "auto"
DEFAULT_CHUNK_SIZE = 512
DEFAULT_MODE = "bm25"
BM25_KEY = "bm25"
"""Where manifests and result books record the BM25 settings (:class:`BM25Params`)."""
LAB_MODE = "tfidf"
"""The mode of ``ctxselect lab``: the chapter's scorer."""
DEFAULT_K = 10
DEFAULT_PACKER = "skip"
DEFAULT_FORMAT = "markdown"
DEFAULT_INDEX_DIR = ".ctxselect"
INDEX_ENV = "CTXSELECT_INDEX"
# Project config files (api/project.py; docs/formats.md, "Project config").
CONFIG_FILE = "ctxselect.toml"
PYPROJECT_FILE = "pyproject.toml"
"""Read when it has a ``[tool.ctxselect]`` table; ``ctxselect.toml`` in the same folder wins."""
CONFIG_ENV = "CTXSELECT_CONFIG"
"""The config file the CLI reads instead of looking for one (``ctxselect --config``)."""
DATASETS_ENV = "CTXSELECT_DATASETS"
IGNORE_FILES = (".gitignore", ".ctxselectignore")
"""The ignore files a folder walk reads in every folder, in gitignore syntax (ingest/walk.py);
in one folder a pattern of a later file wins over an earlier file's."""
# Incremental index updates (docs/12-updates.md).
DEFAULT_COMPACT_FRACTION = 0.1
"""Compact when pending rows (delta rows plus deleted rows) pass this share of live chunks:
searches stay within ~1% of a rebuild's avgdl drift at typical churn, and merges amortise."""
MAX_DELTA_SEGMENTS = 8
"""Merge the delta segments into one when there are more: a search reads each of them."""
TEXTS_IN_MEMORY_MAX = 200_000
"""Up to this many chunks an opened index keeps every chunk's text in memory (fastest
search); above it, a hit's text is read from the store by row id (bounded memory)."""
RELOAD_CHECK_SECONDS = 0.02
"""An open index asks the store for a newer generation at most this often (the check
costs ~2 us, a search ~30 us); commits made by the same process are seen at once."""
DEFAULT_WATCH_INTERVAL = 2.0
"""Seconds between two scans of ``ctxselect index --watch``."""


@dataclass(frozen=True, slots=True)
class Bound:
    """The valid values of one numeric setting, checked alike by the Python API and the CLI.

    NaN and infinities are never valid: a non-finite BM25 k1, for one, makes every score
    NaN or zero, so nothing matches and ``verify`` calls the index damaged.

    Attributes:
        what: The setting as messages name it, e.g. ``BM25 k1``.
        low: Smallest valid value.
        high: Largest valid value; None: no upper limit besides being finite.
        whole: Only whole numbers (ints, not bools) are valid.
        advice: How to choose a value, appended to the error message.
        low_open: ``low`` itself is invalid (the value must be above it).
    """

    what: str
    low: float
    high: float | None
    whole: bool = False
    advice: str = ""
    low_open: bool = False

    def describe(self) -> str:
        """Say the valid range, e.g. ``a finite number from 0 to 10``."""
        kind = "a whole number" if self.whole else "a finite number"
        low = self._show(self.low)
        if self.high is None:
            return f"{kind} {'>' if self.low_open else '>='} {low}"
        if self.low_open:
            return f"{kind} above {low} and at most {self._show(self.high)}"
        return f"{kind} from {low} to {self._show(self.high)}"

    def _show(self, value: float) -> str:
        return f"{int(value):,}" if self.whole else f"{value:g}"

    def check(self, value: object) -> None:
        """Raise ConfigError unless ``value`` is in range (and whole if it must be)."""
        if not self.valid(value):
            advice = f": {self.advice}" if self.advice else ""
            raise ConfigError(f"{self.what} must be {self.describe()}, got {value!r}{advice}")

    def valid(self, value: object) -> bool:
        """Return True when ``value`` is in range (and whole if it must be)."""
        if isinstance(value, bool):
            return False
        if self.whole:
            try:
                number: float = operator.index(value)  # type: ignore[arg-type]
            except TypeError:
                return False
        else:
            if not isinstance(value, numbers.Real):
                return False
            try:
                number = float(value)
            except OverflowError:  # an int too large for a float
                return False
            if not math.isfinite(number):
                return False
        above = number > self.low if self.low_open else number >= self.low
        return above and (self.high is None or number <= self.high)


# Lucene refuses a negative or non-finite k1 and a b outside [0, 1]; useful k1 values are
# 0.5 to 3 (Robertson & Zaragoza 2009), so 10 leaves room for sweeps and nothing absurd.
K1 = Bound("BM25 k1", 0.0, 10.0, advice="0.5 to 3 is usual (the default is 1.5)")
B = Bound("BM25 b", 0.0, 1.0, advice="0 turns length normalisation off, 1 applies it fully")
MAX_CHUNK_SIZE = 1_000_000
"""Tokens (characters for ``paragraph``): far above any context window or embedder input."""
CHUNK_SIZE = Bound(
    "chunk size",
    1,
    MAX_CHUNK_SIZE,
    whole=True,
    advice="tokens (characters for paragraph); 128 to 2,048 is usual",
)
MAX_BUDGET = 100_000_000
"""Tokens: fifty times the largest context window offered today."""
DEFAULT_BUDGET = 2000
"""Tokens of context when a caller names no budget: :meth:`Index.select`, CLI ``select`` and
``grep``, the MCP tools and the adapters all default to it."""
MIN_BUDGET = 100
"""Tokens: the smallest budget ``select`` takes (CLI, config, MCP, adapters): one framed chunk."""
BUDGET = Bound("budget", 0, MAX_BUDGET, whole=True, advice="a number of tokens, e.g. 2000")
"""A budget as a number (cost reports, ``BudgetSpec``); a budget a selection is made with
must also be at least :data:`MIN_BUDGET` (``select``, ``eval``/``sweep``/``lab --budgets``)."""
OVERLAP = Bound(
    "chunk overlap", 0, MAX_CHUNK_SIZE - 1, whole=True, advice="tokens, smaller than the size"
)
K = Bound("k (number of hits)", 1, None, whole=True, advice="e.g. 10")
RUN_DEPTH = Bound("run depth", 1, None, whole=True, advice="1000 is trec_eval's convention")
MAX_BYTES = Bound("max bytes", 1, None, whole=True, advice="the size above which files are skipped")


def check_budget_range(budget: int, maximum: int | None = None, minimum: int = MIN_BUDGET) -> int:
    """Return a ``select`` budget if it is from ``minimum`` to :data:`MAX_BUDGET` (and at
    most a server's ``maximum``): the one check and message of every front end.

    Raises:
        ConfigError: Below ``minimum``, above :data:`MAX_BUDGET`, or above ``maximum``.
    """
    if budget < minimum:
        raise ConfigError(
            f"budget {budget} is below the minimum of {minimum} tokens: ask for at least {minimum}"
        )
    if budget > MAX_BUDGET:
        raise ConfigError(
            f"budget {budget} is above the maximum of {MAX_BUDGET:,} tokens: ask for at most "
            f"{MAX_BUDGET:,} (fifty times the largest context window offered today)"
        )
    if maximum is not None and budget > maximum:
        raise ConfigError(
            f"budget {budget} is above the result cap of {maximum} tokens: ask for at most "
            f"{maximum} (the cap is set where the server is started)"
        )
    return budget


MAX_SECONDS = 7 * 24 * 3600.0
"""A week: any wait or watch interval beyond it is a mistake, not a setting."""
WAIT = Bound("wait", 0.0, MAX_SECONDS, advice="seconds to wait for another writer; 0 fails at once")
WATCH_INTERVAL = Bound(
    "watch interval", 0.0, MAX_SECONDS, low_open=True, advice="seconds between scans, e.g. 2"
)
PERMUTATIONS = Bound(
    "permutations",
    1,
    10_000_000,
    whole=True,
    advice="random sign assignments of the randomization test; 10,000 is usual",
)
PORT = Bound("port", 1, 65_535, whole=True, advice="a free TCP port, e.g. 8000")
SEED = Bound("seed", 0, 2**63 - 1, whole=True, advice="any whole number >= 0, e.g. 0")
TURNS = Bound(
    "turns", 1, None, whole=True, advice="turns a selection stays in the context, e.g. 10"
)
CACHE_FACTOR = Bound(
    "cache factor", 0.0, 1.0, advice="the price of a re-sent token: 0.1 cached, 1.0 uncached"
)


@dataclass(frozen=True, slots=True)
class ChunkSpec:
    """How documents are cut into chunks.

    ``size`` is in tokens of ``tokenizer`` for the ``tokens`` and ``markdown`` chunkers,
    and in characters for ``paragraph`` (the chapter's rule). ``auto`` picks ``markdown``
    for Markdown files and ``tokens`` for everything else.
    """

    chunker: str = DEFAULT_CHUNKER
    size: int = DEFAULT_CHUNK_SIZE
    overlap: int = 0
    tokenizer: str = DEFAULT_TOKENIZER

    def __post_init__(self) -> None:
        CHUNK_SIZE.check(self.size)
        if isinstance(self.overlap, bool) or not isinstance(self.overlap, int):
            raise ConfigError(
                f"chunk overlap must be a whole number of tokens, got {self.overlap!r}"
            )
        if not 0 <= self.overlap < self.size:
            raise ConfigError(
                f"chunk overlap must be >= 0 and smaller than the size {self.size}, "
                f"got {self.overlap}"
            )


@dataclass(frozen=True, slots=True)
class BM25Params:
    """Lucene-style BM25 settings; defaults as bm25s (k1 = 1.5, b = 0.75).

    Lucene's own BM25Similarity defaults to k1 = 1.2; bm25s's 1.5 is kept so our figures
    compare directly with the bm25s numbers published for BEIR. ``identifiers`` also
    indexes the parts of camelCase, snake_case and kebab-case identifiers (index side
    only; ``ctxselect index --identifiers``). Off by default: it lifts code retrieval by
    0.06-0.16 MRR@10 but cost tuned hybrid on SciFact 0.006 nDCG@10 (below its 0.725
    floor), so it is a choice for code collections.
    """

    k1: float = 1.5
    b: float = 0.75
    stem: bool = True
    stopwords: bool = True
    identifiers: bool = False

    def __post_init__(self) -> None:
        K1.check(self.k1)
        B.check(self.b)


@dataclass(frozen=True, slots=True)
class BudgetSpec:
    """How ranked chunks are fitted into a token budget."""

    budget: int
    packer: str = DEFAULT_PACKER
    format: str = DEFAULT_FORMAT
    dedup: bool = True
    merge: bool = True

    def __post_init__(self) -> None:
        BUDGET.check(self.budget)


def env_or(name: str, default: str | None = None) -> str | None:
    """Return the environment variable ``name`` if set and non-empty, else ``default``."""
    value = os.environ.get(name, "")
    return value if value else default


def resolve_index_dir(index: str | os.PathLike[str] | None) -> str:
    """Pick the index folder: argument, then ``CTXSELECT_INDEX``, then ``./.ctxselect``.

    Raises:
        ConfigError: ``index`` is not a path (str or os.PathLike) or None.
    """
    if index is not None and not isinstance(index, str | os.PathLike):
        raise ConfigError(
            f"index must be an index folder (a str or os.PathLike path) or None, got "
            f"{type(index).__name__} {index!r:.60}: pass a path such as '.ctxselect'"
        )
    if index:
        return os.fspath(index)
    return env_or(INDEX_ENV, DEFAULT_INDEX_DIR) or DEFAULT_INDEX_DIR


# Dense and hybrid retrieval (embed/, retrieve/dense.py, retrieve/hybrid.py, api/tune.py).

DEFAULT_EMBEDDER = "minilm"
DEFAULT_EMBED_BATCH = 32
EMBEDDER_ENV = "CTXSELECT_EMBEDDER"
# Exact search is one matrix product and costs under 1 ms a query at SciFact's size
# (5k chunks); from about 50k chunks an HNSW graph answers faster at recall@10 >= 0.98
# (bench/dense_hybrid.py measures both; docs/13-dense-hybrid.md).
DEFAULT_ANN_THRESHOLD = 50_000
# Each side contributes its top 1,000 chunks; zscore and minmax are taken over that pool.
# Measured (tuning CV, nDCG@10): depth 1000 beat 100 by 0.002 on SciFact, 0.006 on NFCorpus.
DEFAULT_FUSE_DEPTH = 1000
DEFAULT_MMR_LAMBDA = 0.7
FUSE_K = Bound(
    "fusion k", 0.0, 1_000_000.0, low_open=True, advice="RRF's rank constant; 60 is usual"
)
FUSE_WEIGHT = Bound(
    "fusion weight", 0.0, 1.0, advice="the dense side's share: 0 keyword only, 1 dense only"
)
FUSE_DEPTH = Bound("fusion depth", 1, None, whole=True, advice=f"e.g. {DEFAULT_FUSE_DEPTH}")


@dataclass(frozen=True, slots=True)
class FuseSpec:
    """How a keyword ranking and a dense ranking are fused into one (``hybrid`` mode).

    Attributes:
        method: ``rrf`` (reciprocal rank fusion, Cormack et al. 2009) or ``convex``
            (a weighted sum of normalised scores, Bruch et al. 2023).
        k: RRF's rank constant: a chunk at rank r contributes ``1 / (k + r)``.
        norm: How ``convex`` puts the two score scales on one: ``minmax`` or ``zscore``.
        weight: Share of the dense side, from 0 (keyword only) to 1 (dense only); RRF
            weighs each list's contributions by it too.
        depth: How many chunks each side contributes to the fusion.
    """

    method: str = "rrf"
    k: float = 60.0
    norm: str = "minmax"
    weight: float = 0.5
    depth: int = DEFAULT_FUSE_DEPTH

    def __post_init__(self) -> None:
        FUSE_K.check(self.k)
        FUSE_WEIGHT.check(self.weight)
        FUSE_DEPTH.check(self.depth)

    def label(self) -> str:
        """Describe the spec in one short line, e.g. ``convex zscore w=0.60``."""
        if self.method == "rrf":
            return f"rrf k={self.k:g} w={self.weight:.2f}"
        return f"{self.method} {self.norm} w={self.weight:.2f}"
