"""`ast.parse` safe for the verifier's threads.

CPython 3.11 keeps the AST constructor's recursion depth in one counter per interpreter:
when a thread switch lands inside one parse (a finaliser the garbage collector runs there
can release the GIL) and another thread parses meanwhile, one of them raises `SystemError:
AST constructor recursion depth mismatch` (python/cpython#106905; reproduced here with two
threads in a few hundred parses). Verifiers check a batch on several threads
(`verify_many`), and a batch whose verify raised is redone one candidate at a time, so
every parse of Python source in the host's verifiers and generators takes one lock.
"""

from __future__ import annotations

import ast
import threading

_lock = threading.RLock()  # re-entrant: a finaliser run inside a parse may parse too


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    with _lock:
        return ast.parse(source, filename, mode)
