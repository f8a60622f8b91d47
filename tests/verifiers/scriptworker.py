"""A warm worker whose server is a short Python script (the host's side of `verifiers.warm`
under test, without a domain's runner)."""

from __future__ import annotations

import sys

from verifiers.warm import Worker, WorkerCommand


def script_worker(server: str, prefix: str) -> type[Worker]:
    """A `Worker` class whose server runs `server` (given the result fd as argv[1])."""

    class ScriptWorker(Worker):
        def command(self, fd: int) -> WorkerCommand:
            argv = [sys.executable, "-I", "-S", "-c", server, str(fd)]
            return WorkerCommand(argv, self.python_env(), ro=self.python_paths())

    ScriptWorker.prefix = prefix
    ScriptWorker.__name__ = ScriptWorker.__qualname__ = f"ScriptWorker[{prefix}]"
    return ScriptWorker
