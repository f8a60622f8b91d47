"""`python -m flows.cli`: the `crucible` command."""

from flows.cli import app

app()
