"""Commands load on demand: a run imports only the module of the command it runs, and
the table that says which module defines which command is complete and right."""

from __future__ import annotations

import json
import subprocess
import sys

from ctxselect.interfaces.cli.main import COMMAND_MODULES, cli, register_commands


def test_the_table_names_every_command_and_the_module_that_defines_it():
    register_commands()
    defined = {name: command.callback.__module__ for name, command in cli.commands.items()}
    assert defined == {
        name: f"ctxselect.interfaces.cli.{module}" for name, module in COMMAND_MODULES.items()
    }


def _modules_after(*args: str) -> set[str]:
    """The command modules a fresh process has imported after running ``ctxselect ARGS``."""
    script = (
        "import json, sys\n"
        "from ctxselect.interfaces.cli.main import cli\n"
        f"try:\n    cli.main({list(args)!r}, prog_name='ctxselect')\n"
        "except SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.startswith('ctxselect.interfaces.cli.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out.splitlines()[-1])
    return {m.rsplit(".", 1)[1] for m in loaded} & set(COMMAND_MODULES.values())


def test_a_command_imports_only_its_own_module():
    assert _modules_after("search", "--help") == {"commands"}
    assert _modules_after("mcp", "--help") == {"agent"}
    assert _modules_after("sweep", "--help") == {"sweep"}


def test_help_and_an_unknown_command_load_them_all():
    every = set(COMMAND_MODULES.values())
    assert _modules_after("--help") == every
    assert _modules_after("no-such-command") == every


def test_info_states_the_same_defaults_whichever_commands_are_loaded(tmp_path):
    # `info` reads option defaults off other commands (`--budget` off `select`): a run
    # that loaded only `info`'s module must state what a run with every command does
    from ctxselect.api import index_paths

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Budgets\n\nA token budget caps a selection.\n")
    index = str(tmp_path / "ix")
    index_paths([tmp_path / "docs"], index)
    lazy = (
        "import json\n"
        "from ctxselect.interfaces.cli.main import cli\n"
        f"cli.main(['--no-config', 'info', '--index', {index!r}, '--json'])\n"
    )
    every = lazy.replace("import cli\n", "import cli, register_commands\nregister_commands()\n")
    sources = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script], capture_output=True, text=True, check=True
            ).stdout
        )["sources"]
        for script in (lazy, every)
    ]
    assert sources[0] == sources[1]
    assert {"setting": "budget", "value": 2000, "source": "default"} in sources[0]
