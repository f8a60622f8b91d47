"""`python -m verifiers.embedded < in.jsonl > out.jsonl`: the embedded verifier as a plain
process.

Needs only python, arm-none-eabi-gcc, qemu-system-arm and bwrap (no Prefect, Ray, deltalake
or DuckDB): it runs on an `emulator` node as is. `--help` lists the options.
"""

import sys

from verifiers.worker import main

if __name__ == "__main__":
    sys.exit(main("embedded"))
