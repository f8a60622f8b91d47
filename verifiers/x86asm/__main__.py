"""`python -m verifiers.x86asm < in.jsonl > out.jsonl`: the x86asm verifier as a plain
process.

Needs only python, gcc, binutils, glibc's static libraries, valgrind and bwrap (no Prefect,
Ray, deltalake or DuckDB): it runs on a `cpu` node as is. `--help` lists the options.
"""

import sys

from verifiers.worker import main

if __name__ == "__main__":
    sys.exit(main("x86asm"))
