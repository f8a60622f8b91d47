"""`python -m verifiers.ascendc < in.jsonl > out.jsonl`: the AscendC verifier as a plain
process.

Needs only python, bwrap and pyasc's interpreter (`pyasc-python`, infra/install-toolchains.sh
ascendc) for the gates that run anywhere; bisheng and an NPU (or CANN's simulator) for the
rest, which end `infra_error` / `no_cann` elsewhere. `--help` lists the options.
"""

import sys

from verifiers.worker import main

if __name__ == "__main__":
    sys.exit(main("ascendc"))
