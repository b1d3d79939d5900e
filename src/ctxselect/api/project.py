"""Project config files: ``ctxselect.toml``, or ``[tool.ctxselect]`` in ``pyproject.toml``.

A project keeps its index and selection defaults in one file, found as ruff finds its
own: the nearest folder, from the start folder up, that holds ``ctxselect.toml`` or a
``pyproject.toml`` with a ``[tool.ctxselect]`` table (a ``pyproject.toml`` without one is
passed over). In one folder ``ctxselect.toml`` wins, as ruff's ``ruff.toml`` wins over
its ``pyproject.toml``; files further up are not merged in (ruff does not merge either).
Unlike ruff, the walk ends at the repository root (the first folder holding ``.git``):
a file above a repository, in a home folder say, never changes what the project does.

The Python API reads no config file by itself: ``open_index`` and ``index_paths`` take
explicit arguments. :func:`load_project_config` returns the checked settings to pass on;
the CLI turns them into its commands' defaults (``interfaces/cli/project.py``).
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxselect import config
from ctxselect.config import CONFIG_FILE, PYPROJECT_FILE, Bound
from ctxselect.errors import ConfigError

Check = Callable[[object], object]


@dataclass(frozen=True, slots=True)
class Setting:
    """One key of a project config file.

    Attributes:
        key: The key, spelled as the Python keyword and the JSON key (``max_bytes``).
        check: Returns the value as the API takes it, or raises ConfigError saying why not.
        default: The value used when nothing sets it (None: decided elsewhere, e.g. the
            index's own).
    """

    key: str
    check: Check
    default: object = None


@dataclass(frozen=True, slots=True)
class ProjectConfig:
    """The checked settings of one project config file.

    Attributes:
        path: The file read (absolute); None when no file was found.
        settings: Key to value, checked; ``index`` is made absolute, relative to the
            file's folder.
    """

    path: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: object = None) -> Any:
        """Return the value of ``key``, or ``default`` when the file does not set it."""
        return self.settings.get(key, default)


@dataclass(frozen=True, slots=True)
class SettingSource:
    """Where the value of one setting comes from (``ctxselect info``).

    Attributes:
        setting: The config key (``size``, ``mode``, ...).
        value: The value the next command would use.
        source: ``flag --index``, ``env CTXSELECT_INDEX``, ``config PATH``,
            ``index manifest`` or ``default``.
    """

    setting: str
    value: object
    source: str


def _bounded(bound: Bound) -> Check:
    def check(value: object) -> object:
        bound.check(value)
        return value

    return check


def _named(kind: str, *extra: str) -> Check:
    def check(value: object) -> object:
        from ctxselect.api.read import names

        valid = [*names(kind), *extra]
        if not isinstance(value, str) or value not in valid:
            raise ConfigError(f"{kind} must be one of {', '.join(valid)}, got {value!r}")
        return value

    return check


def _path(value: object) -> object:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"index must be a folder path (a non-empty string), got {value!r}")
    return value


def _flag(value: object) -> object:
    if not isinstance(value, bool):
        raise ConfigError(f"promote must be true or false, got {value!r}")
    return value


def _embed_long(value: object) -> object:
    from ctxselect.embed.windows import check_embed_long  # numpy: only when a file sets it

    return check_embed_long(value)  # TOML has no null: None never reaches it


def _budget(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(
            f"budget must be a whole number of tokens, got {value!r}: write a number such as 2000"
        )
    return config.check_budget_range(value)  # select's range and message, as --budget


def _stop(value: object) -> object:
    from ctxselect.api.read import check_stop

    return check_stop(value)


_ANN = Bound("ann threshold", 1, None, whole=True, advice="embedded chunks, e.g. 50000")
_MMR = Bound("mmr", 0.0, 1.0, advice="1 ranks by relevance alone; 0.5 to 0.7 is usual")
_SETTINGS = (
    Setting("index", _path, config.DEFAULT_INDEX_DIR),
    Setting("chunker", _named("chunker"), config.DEFAULT_CHUNKER),
    Setting("size", _bounded(config.CHUNK_SIZE), config.DEFAULT_CHUNK_SIZE),
    Setting("overlap", _bounded(config.OVERLAP), 0),
    Setting("tokenizer", _named("tokenizer"), config.DEFAULT_TOKENIZER),
    Setting("k1", _bounded(config.K1), config.BM25Params().k1),
    Setting("b", _bounded(config.B), config.BM25Params().b),
    Setting("embedder", _named("embedder", "none"), "none"),
    Setting("ann_threshold", _bounded(_ANN), config.DEFAULT_ANN_THRESHOLD),
    Setting("embed_long", _embed_long, "auto"),
    Setting("max_bytes", _bounded(config.MAX_BYTES)),
    Setting("mode", _named("mode"), config.DEFAULT_MODE),
    Setting("k", _bounded(config.K), config.DEFAULT_K),
    Setting("budget", _budget),
    Setting("packer", _named("packer"), config.DEFAULT_PACKER),
    Setting("format", _named("format"), config.DEFAULT_FORMAT),
    Setting("stop", _stop),
    Setting("mmr", _bounded(_MMR)),
    Setting("promote", _flag, False),
)
SETTINGS: Mapping[str, Setting] = {s.key: s for s in _SETTINGS}
"""Every key a project config file may set, in the order ``ctxselect info`` lists them."""


def find_project_config(start: str | os.PathLike[str] | None = None) -> Path | None:
    """Return the nearest project config file from ``start`` (default: the current folder) up.

    Looks in ``start`` and each parent for ``ctxselect.toml``, then for a ``pyproject.toml``
    with a ``[tool.ctxselect]`` table; stops after the first folder holding ``.git`` (the
    repository root) or at the filesystem root. Returns None when there is none.

    Raises:
        ConfigError: A ``pyproject.toml`` on the way is not valid TOML.
    """
    found = _discover(Path(start) if start is not None else Path.cwd())
    return found[0] if found else None


def load_project_config(path: str | os.PathLike[str] | None = None) -> ProjectConfig:
    """Read and check a project config file, or the nearest one from a folder up.

    Args:
        path: A ``ctxselect.toml`` (any file name but ``pyproject.toml`` is read whole) or
            a ``pyproject.toml`` (its ``[tool.ctxselect]`` table); or a folder to look
            from as :func:`find_project_config` does (default: the current folder).

    Returns:
        The checked settings; an empty ProjectConfig (``path`` None) when a folder was
        given and no file was found.

    Raises:
        ConfigError: The file is missing, not TOML, lacks ``[tool.ctxselect]``, or sets
            an unknown key or an invalid value (the message names the file and the key).
    """
    start = Path(path) if path is not None else Path.cwd()
    table: dict[str, Any] | None
    if start.is_dir():
        found = _discover(start)
        if found is None:
            return ProjectConfig()
        file, table = found
    else:
        file = start.absolute()
        table = _table(file, _read(file))
        if table is None:
            raise ConfigError(
                f"{file}: no [tool.ctxselect] table: add one, or give a ctxselect.toml"
            )
    return ProjectConfig(str(file), _checked(file, table))


def _discover(start: Path) -> tuple[Path, dict[str, Any]] | None:
    folder = start.absolute()
    if not folder.is_dir():
        folder = folder.parent
    for current in (folder, *folder.parents):
        for name in (CONFIG_FILE, PYPROJECT_FILE):
            candidate = current / name
            if candidate.is_file():
                table = _table(candidate, _read(candidate))
                if table is not None:
                    return candidate, table
        if (current / ".git").exists():  # a folder, or a file in worktrees and submodules
            return None
    return None


def _read(file: Path) -> dict[str, Any]:
    try:
        with file.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {file} does not exist: check the path") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from None


def _table(file: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    """The settings table of a parsed file: all of it, or pyproject's [tool.ctxselect]."""
    if file.name != PYPROJECT_FILE:
        return data
    tool = data.get("tool")
    table = tool.get("ctxselect") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{file}: tool.ctxselect must be a table ([tool.ctxselect])")
    return table


def _checked(file: Path, table: Mapping[str, Any]) -> dict[str, Any]:
    where = f"{file} [tool.ctxselect]" if file.name == PYPROJECT_FILE else str(file)
    settings: dict[str, Any] = {}
    for key, value in table.items():
        setting = SETTINGS.get(key)
        if setting is None:
            raise ConfigError(f"{where}: unknown key {key!r}: {_suggest(key)}")
        try:
            settings[key] = setting.check(value)
        except ConfigError as exc:
            raise ConfigError(f"{where}: key {key!r}: {exc}") from None
    if "index" in settings and "://" not in settings["index"]:  # a folder, not a store URI
        # relative to the file's folder, as ruff resolves the paths in its config
        settings["index"] = os.path.normpath(file.parent / os.path.expanduser(settings["index"]))
    _check_overlap(where, settings)
    return settings


def _check_overlap(where: str, settings: Mapping[str, Any]) -> None:
    """Refuse an overlap not below the size the file sets, or the default size without one.

    ``index`` and ``chunk`` cut with the default size when no ``size`` is set, so the
    file is checked against it here, where the message can name the file and the key.
    """
    overlap = settings.get("overlap", 0)
    size = settings.get("size", config.DEFAULT_CHUNK_SIZE)
    if overlap < size:
        return
    which = "" if "size" in settings else " (the default: the file sets no size)"
    raise ConfigError(
        f"{where}: key 'overlap': chunk overlap must be smaller than the size {size}{which}, "
        f"got {overlap}: lower overlap, or set a larger size in the same file"
    )


def _suggest(key: str) -> str:
    close = difflib.get_close_matches(key.replace("-", "_"), list(SETTINGS), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}valid keys are {', '.join(SETTINGS)}"
