"""The ``ctxselect`` command: one subcommand per api call, ``--json`` on every one.

The group and the flags commands share live in ``group.py``; each command module adds
its commands to that group. :data:`COMMAND_MODULES` says which module defines which
command, so that a run imports only the module of the command it runs (a cold
``ctxselect mcp --json`` spent about 0.3 s importing the other command modules);
:func:`register_commands` imports them all (``--help``, the docs generator).
"""

from __future__ import annotations

import importlib
import sys

from ctxselect.interfaces.cli.group import INTERRUPTED, cli

COMMAND_MODULES: dict[str, str] = {
    "add": "store",
    "chunk": "commands",
    "compact": "store",
    "compare": "experiments",
    "cost": "sweep",
    "eval": "experiments",
    "examples": "agent",
    "explain": "commands",
    "grep": "grep",
    "index": "indexing",
    "info": "commands",
    "lab": "experiments",
    "mcp": "agent",
    "remove": "store",
    "search": "commands",
    "select": "commands",
    "sweep": "sweep",
    "tune": "tune",
    "verify": "store",
}
"""Command name -> the module of ``ctxselect.interfaces.cli`` that defines it."""


def load_commands(name: str | None = None) -> None:
    """Import the module that defines command ``name``; every command module when ``name``
    is None or names no command (so that click can list them, or say there is none).

    Ctrl-C while a module loads (before any command runs) ends with one line and exit
    130, as it does during a write, not with a traceback through the imports.
    """
    wanted = COMMAND_MODULES.get(name) if name is not None else None
    modules = [wanted] if wanted is not None else sorted(set(COMMAND_MODULES.values()))
    try:
        for module in modules:
            _import_command_module(module)
    except KeyboardInterrupt:
        print("interrupted while starting: nothing was read or written", file=sys.stderr)
        raise SystemExit(INTERRUPTED) from None


def _import_command_module(module: str) -> None:
    importlib.import_module(f"ctxselect.interfaces.cli.{module}")


def register_commands() -> None:
    """Import every command module, so that each adds its commands to :data:`cli`."""
    load_commands(None)


cli.command_loader = load_commands


def main() -> None:
    """Entry point of the ``ctxselect`` script."""
    cli(prog_name="ctxselect")


__all__ = ["COMMAND_MODULES", "cli", "load_commands", "main", "register_commands"]
