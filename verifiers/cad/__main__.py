"""`python -m verifiers.cad < in.jsonl > out.jsonl`: the CAD verifier as a plain process.

Needs only python and cadquery (no Prefect, Ray, deltalake or DuckDB): it runs on a `cad`
node as is. `--help` lists the options (workers, --unconfined, ...).
"""

import sys

from verifiers.worker import main

if __name__ == "__main__":
    sys.exit(main("cad"))
