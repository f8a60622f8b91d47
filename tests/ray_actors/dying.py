"""A verifier worker whose verifier dies on a marker in a candidate's code: the stand-in
for a verifier process that crashes or is killed mid-batch (a native library's abort, the
OOM killer), which no real candidate can cause through the sandbox. Importable by Ray's
worker processes (the actor class is pickled by reference)."""

from __future__ import annotations

import os
import signal
import sys

from ray_actors.verify import VerifierWorker

EXIT = "// die: exit 3"
KILL = "// die: SIGKILL"
MARKS = (EXIT, KILL)


class DyingWorker(VerifierWorker):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        verify_many = self.verifier.verify_many

        def dying(pairs, limits):
            for _, code in pairs:
                if EXIT in code or KILL in code:
                    how = "exit 3" if EXIT in code else "SIGKILL"
                    print("verifying a candidate that kills its worker", file=sys.stderr)
                    print(f"last words before {how} (pid {os.getpid()})", file=sys.stderr)
                    sys.stderr.flush()
                    if EXIT in code:
                        os._exit(3)
                    os.kill(os.getpid(), signal.SIGKILL)
            return verify_many(pairs, limits)

        self.verifier.verify_many = dying
