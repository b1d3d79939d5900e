"""Run the CLI as ``python -m ctxselect``."""

from ctxselect.interfaces.cli.main import main

main()
