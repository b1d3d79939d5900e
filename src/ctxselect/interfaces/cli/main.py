"""The ``ctxselect`` command: one subcommand per api call, ``--json`` on every one.

The group and the flags commands share live in ``group.py``; each command module adds
its commands to that group, and :func:`register_commands` imports them all.
"""

from __future__ import annotations

import sys

from ctxselect.interfaces.cli.group import INTERRUPTED, cli


def register_commands() -> None:
    """Import every command module, so that each adds its commands to :data:`cli`."""
    from ctxselect.interfaces.cli import (  # noqa: F401  (register commands)
        agent,
        commands,
        experiments,
        grep,
        indexing,
        store,
        sweep,
        tune,
    )


def main() -> None:
    """Entry point of the ``ctxselect`` script.

    Ctrl-C while the commands load (before any of them runs) ends with one line and exit
    130, as it does during a write, not with a traceback through the imports.
    """
    try:
        register_commands()
    except KeyboardInterrupt:
        print("interrupted while starting: nothing was read or written", file=sys.stderr)
        raise SystemExit(INTERRUPTED) from None
    cli(prog_name="ctxselect")


__all__ = ["cli", "main", "register_commands"]
