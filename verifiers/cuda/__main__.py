"""`python -m verifiers.cuda < in.jsonl > out.jsonl`: the cuda verifier as a plain process.

Needs only python, torch, numpy and cupy and nvcc (no Prefect, Ray, deltalake or DuckDB): it
runs on a GPU node as is. `--help` lists the options (workers, --unconfined, ...).
"""

import sys

from verifiers.worker import main

if __name__ == "__main__":
    sys.exit(main("cuda"))
