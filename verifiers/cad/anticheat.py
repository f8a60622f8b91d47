"""Static rules for CAD scripts: a part script needs CadQuery, math and little else.

Defence in depth: the build process never sees the reference (not on its disk, dropped from
the worker's memory before the script runs), and a pass needs geometry the judge measured
itself. These rules refuse the scripts that try anyway, with the reason in the feedback.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

ALLOWED_IMPORTS = frozenset(
    {"cadquery", "cq", "math", "numpy", "itertools", "functools", "typing", "dataclasses",
     "enum", "collections", "fractions", "decimal", "OCP", "__future__"}
)  # fmt: skip
FORBIDDEN_CALLS = frozenset(
    {"open", "exec", "eval", "compile", "__import__", "globals", "locals", "vars",
     "breakpoint", "input", "memoryview", "setattr", "delattr"}
)  # fmt: skip
FORBIDDEN_ATTRS = frozenset(
    {"__globals__", "__builtins__", "__subclasses__", "__code__", "__closure__", "f_globals",
     "f_back", "gi_frame", "__loader__", "__spec__"}
)  # fmt: skip

WHY = {
    "forbidden_import": "a part script needs cadquery and math; other modules reach files, "
    "processes or the harness",
    "forbidden_call": "file access, dynamic code and introspection have no place in a part "
    "script; they are how a script would look for the reference",
}


@dataclass(frozen=True)
class Finding:
    rule: str
    line: int
    what: str

    @property
    def why(self) -> str:
        return WHY[self.rule]


def scan(code: str) -> list[Finding]:
    """Rule violations, in source order; a syntax error is left to the build gate."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in ALLOWED_IMPORTS:
                    found.append(Finding("forbidden_import", node.lineno, f"imports {alias.name}"))
        elif isinstance(node, ast.ImportFrom):
            mod = (node.module or "").split(".")[0]
            if node.level or mod not in ALLOWED_IMPORTS:
                found.append(
                    Finding("forbidden_import", node.lineno, f"imports from {node.module or '.'}")
                )
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in FORBIDDEN_CALLS:
                found.append(Finding("forbidden_call", node.lineno, f"calls {node.func.id}()"))
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRS:
            found.append(Finding("forbidden_call", node.lineno, f"reads .{node.attr}"))
        elif isinstance(node, ast.Name) and node.id in ("__builtins__", "__loader__"):
            found.append(Finding("forbidden_call", node.lineno, f"reads {node.id}"))
    return sorted(found, key=lambda f: f.line)
