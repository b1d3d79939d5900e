"""The project config file as the CLI's defaults, and where each setting came from.

``ctxselect`` reads the nearest ``ctxselect.toml`` (or ``[tool.ctxselect]`` in a
``pyproject.toml``; ``ctxselect.api.project`` finds and checks it) and hands its values to
click as the commands' ``default_map``. Click then resolves each option, highest first:
the flag, its environment variable (``CTXSELECT_INDEX``), the config file, the option's
own default; an option left unset there (``--chunker``, ``--mode``, ...) falls through to
the index manifest, then to the built-in default. ``--help`` shows the config's values
as the defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click
from click.core import ParameterSource

from ctxselect.api.project import SETTINGS, ProjectConfig, SettingSource, load_project_config
from ctxselect.config import INDEX_ENV
from ctxselect.manifest import Manifest

APPLIES: Mapping[str, tuple[str, ...]] = {
    "chunker": ("index", "chunk"),
    "size": ("index", "chunk"),
    "overlap": ("index", "chunk"),
    "tokenizer": ("index", "chunk"),
    "k1": ("index",),
    "b": ("index",),
    "embedder": ("index",),
    "ann_threshold": ("index",),
    "embed_long": ("index",),
    "max_bytes": ("index", "add"),
    "mode": ("search", "select", "explain"),
    "k": ("search",),
    "budget": ("select",),
    "packer": ("select",),
    "format": ("select",),
    "stop": ("select",),
    "mmr": ("search", "select"),
    "promote": ("select",),
}
"""The commands each key sets a default of; ``index`` sets every command's ``--index``
that reads ``CTXSELECT_INDEX``. ``eval``, ``sweep`` and ``lab`` build their own
experiments and read none of them."""

# Index-time settings: a config value takes effect at the next `ctxselect index`.
_BUILT = (
    "chunker", "size", "overlap", "tokenizer", "k1", "b", "embedder", "ann_threshold",
    "embed_long", "max_bytes",
)  # fmt: skip


def option_for(command: click.Command, name: str, key: str) -> click.Parameter | None:
    """Return the option of ``command`` (registered as ``name``) that ``key`` sets, if any."""
    if key == "index":
        return next(
            (p for p in command.params if p.name == "index" and p.envvar == INDEX_ENV), None
        )
    if name not in APPLIES.get(key, ()):
        return None
    flag = "-k" if key == "k" else "--" + key.replace("_", "-")
    return next((p for p in command.params if flag in p.opts), None)


def default_map(group: click.Group, project: ProjectConfig) -> dict[str, dict[str, Any]]:
    """Turn a project config into click's ``default_map``: command -> option -> value."""
    defaults: dict[str, dict[str, Any]] = {}
    for name, command in group.commands.items():
        entries = {}
        for key, value in project.settings.items():
            param = option_for(command, name, key)
            if param is not None and param.name:
                entries[param.name] = value
        if entries:
            defaults[name] = entries
    return defaults


def apply_project_config(ctx: click.Context, path: str | None) -> ProjectConfig:
    """Load the config file ``path`` (or the nearest one) and make it ``ctx``'s defaults.

    Raises:
        ConfigError: The file is not valid (the message names the file and the key).
    """
    project = load_project_config(path)  # its budget check is the one --budget applies
    if isinstance(ctx.command, click.Group) and project.settings:
        ctx.default_map = {**(ctx.default_map or {}), **default_map(ctx.command, project)}
        ctx.show_default = True  # subcommands' --help then shows the file's values
    return project


def setting_sources(
    ctx: click.Context, project: ProjectConfig, index: str, manifest: Manifest
) -> tuple[SettingSource, ...]:
    """Say, for every config key, the value the next command uses and where it comes from.

    Args:
        ctx: The running command's context (it tells a flag from an environment variable).
        project: The project config read, empty when there is none.
        index: The index folder opened.
        manifest: The index's typed manifest (``Index.settings``).
    """
    rows = [SettingSource("index", index, _index_source(ctx, project))]
    built = _manifest_values(manifest)
    group = ctx.parent.command if ctx.parent else None
    for key, setting in SETTINGS.items():
        if key == "index":
            continue
        if key in project.settings:
            value, source = project.settings[key], f"config {project.path}"
            if key in _BUILT and key in built and built[key] != value:
                source += _differs(key, value, built[key])
        elif key in built:
            value, source = built[key], "index manifest"
        else:
            value, source = _default(ctx, group, key, setting.default), "default"
        rows.append(SettingSource(key, value, source))
    return tuple(rows)


def render_sources(rows: tuple[SettingSource, ...]) -> str:
    """``setting.KEY = VALUE (SOURCE)`` lines, as ``info``'s other ``key = value`` lines."""
    return "\n".join(f"setting.{r.setting} = {_shown(r.value)} ({r.source})" for r in rows)


def _index_source(ctx: click.Context, project: ProjectConfig) -> str:
    source = ctx.get_parameter_source("index")
    if source is ParameterSource.COMMANDLINE:
        return "flag --index"
    if source is ParameterSource.ENVIRONMENT:
        return f"env {INDEX_ENV}"
    if source is ParameterSource.DEFAULT_MAP:
        return f"config {project.path}"
    return "default"


def _manifest_values(manifest: Manifest) -> dict[str, object]:
    """The settings the index was built with, by config key."""
    chunk, bm25, embedder = manifest.chunk, manifest.bm25, manifest.embedder
    values: dict[str, object] = {
        "chunker": chunk.chunker,
        "size": chunk.size,
        "overlap": chunk.overlap,
        "tokenizer": chunk.tokenizer,
        "k1": bm25.k1,
        "b": bm25.b,
        "embedder": embedder.name if embedder is not None else "none",
        "mode": manifest.default_mode,
    }
    if manifest.max_bytes is not None:  # recorded since the index remembers its limit
        values["max_bytes"] = manifest.max_bytes
    if embedder is not None:
        from ctxselect.api.modes import long_policy_of  # numpy: only for a dense index

        values["ann_threshold"] = embedder.ann_threshold
        policy = long_policy_of(embedder.name, embedder.model_id)
        if policy is not None:
            values["embed_long"] = policy
    return values


def _differs(key: str, value: object, built: object) -> str:
    """Say what a config value that differs from the index's own does to it."""
    if key == "embed_long" and value == "auto":  # auto never changes a recorded policy
        return f"; the index has {built}, which auto keeps"
    return f"; the index has {built} until `ctxselect index` runs"


def _default(ctx: click.Context, group: click.Command | None, key: str, fallback: object) -> object:
    """The option's own default where it has one (``--budget 2000``), else ``fallback``.

    The command is asked of the group, which loads its module if this run has not.
    """
    if isinstance(group, click.Group):
        for name in APPLIES.get(key, ()):
            command = group.get_command(ctx, name)
            param = option_for(command, name, key) if command else None
            if param is not None and isinstance(param.default, str | int | float):
                return param.default  # (a flag's default is click's UNSET sentinel)
    return fallback


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "none" if value is None else str(value)
