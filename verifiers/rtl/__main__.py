"""`python -m verifiers.rtl < in.jsonl > out.jsonl`: the RTL verifier as a plain process."""

import sys

from verifiers.worker import main

if __name__ == "__main__":
    sys.exit(main("rtl"))
