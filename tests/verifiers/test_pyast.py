"""`verifiers.pyast.parse`: Python source parsed on several threads at once never raises
CPython 3.11's `SystemError: AST constructor recursion depth mismatch` (a verifier checks a
batch on threads; a batch whose verify raised is redone one by one)."""

from __future__ import annotations

import ast
import sys
import threading
import time
from pathlib import Path

import pytest

from verifiers import pyast

SOURCE = (Path(__file__).resolve().parents[2] / "verifiers/kernels/anticheat.py").read_text()


class _Finaliser:
    """Freed by the garbage collector, possibly inside another thread's parse: its
    `__del__` gives the GIL away there."""

    def __del__(self):
        time.sleep(0)


def _parse_on_threads(parse, threads: int = 4, rounds: int = 5) -> list[str]:
    errors: list[str] = []

    def work() -> None:
        for _ in range(rounds):
            junk = [_Finaliser() for _ in range(50)]
            for j in junk:
                j.me = j  # a cycle: only the collector frees it
            del junk
            try:
                tree = parse(SOURCE)
            except SystemError as e:
                errors.append(str(e))
            else:
                assert isinstance(tree, ast.Module)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the race is CPython 3.11's")
def test_parsing_on_threads_never_trips_the_ast_recursion_counter():
    # the control: plain ast.parse on the same threads trips it (so this test can fail)
    assert any("recursion depth mismatch" in e for e in _parse_on_threads(ast.parse))
    assert _parse_on_threads(pyast.parse) == []


def test_the_host_code_parses_python_only_through_it():
    root = Path(__file__).resolve().parents[2]
    raw = [
        f"{p.relative_to(root)}:{n}"
        for d in ("verifiers", "generators", "ray_actors", "flows", "lake")
        for p in sorted((root / d).rglob("*.py"))
        # the lowering driver runs alone in pyasc's own interpreter (one thread, no repo)
        if p.name != "pyast.py" and p.name != "lower_driver.py"
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if "ast.parse(" in line.replace("pyast.parse(", "")
    ]
    assert raw == [], "parse through verifiers.pyast.parse (its lock): " + ", ".join(raw)
