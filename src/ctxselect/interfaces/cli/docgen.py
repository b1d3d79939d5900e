"""Generate docs/cli.md from the commands' own ``--help`` text.

Run ``python -m ctxselect.interfaces.cli.docgen > docs/cli.md``; a test fails when the
file is stale or a command is missing from it.
"""

from __future__ import annotations

import click

from ctxselect.interfaces.cli.main import cli, register_commands

register_commands()

HEADER = """# CLI reference

Generated from `--help` by `python -m ctxselect.interfaces.cli.docgen > docs/cli.md`;
do not edit by hand. Every command takes `--json` (the API's return value as JSON on
stdout) and `--index DIR` where it reads an index (environment variable
`CTXSELECT_INDEX`). A bad flag or value the command line checks by itself is a usage
error: click's usage line and the error on stderr, exit code 2. That covers an unknown
command or option, a number out of its range (`--budget 99`, `-k 0`, `--workers 0`), a
malformed `--stop`, `--where`, `--include` or `--exclude`, and an unknown name for `--mode`,
`--chunker`, `--tokenizer`, `--packer` or `--format` (the error lists the valid names). Every
other error (no index, an unreadable file, a value only the run can judge, such as a `sweep`
grid) is one line on stderr starting with `error:`, exit code 1; `ctxselect --debug
COMMAND ...` shows its traceback.
"""


def cli_reference() -> str:
    """Return the Markdown reference of the top-level help and every command's help."""
    parts = [HEADER]
    settings = {**cli.context_settings, "terminal_width": 100}
    with click.Context(cli, info_name="ctxselect", **settings) as ctx:
        parts.append("## ctxselect\n\n```text\n" + cli.get_help(ctx) + "\n```\n")
        for name in sorted(cli.commands):
            command = cli.commands[name]
            with click.Context(command, info_name=name, parent=ctx, terminal_width=100) as sub:
                parts.append(f"## ctxselect {name}\n\n```text\n{command.get_help(sub)}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    click.echo(cli_reference(), nl=False)
