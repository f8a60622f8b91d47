"""The `crucible` command: one module per command group, all on the one app of `base`.

Importing this package registers every command: the order of the imports below is the
order `crucible --help` shows its panels and commands in."""

# isort: off
from flows.cli.install import check_modules

check_modules()  # before anything imports `verifiers` & co: a clash is one line, not a traceback

# registers the commands, in this order
from flows.cli import run, server, rewards, tasks, sql, show, data, imports  # noqa: E402, F401
from flows.cli.base import app  # noqa: E402

# isort: on
__all__ = ["app"]
