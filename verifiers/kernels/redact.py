"""The problem as a runner may see it: the reference's computation removed.

A runner needs `get_inputs`, `get_init_inputs`, the size constants and the reference
Model's `__init__` (its parameters are loaded into the candidate's model), never its
`forward`: the process that runs candidate code must not be able to call the reference
(issue 11: `sys.modules` handed a candidate the reference Model). Every method of `Model`
but `__init__` is dropped, and so is every module-level function or class the kept code
does not use. Stdlib only.
"""

from __future__ import annotations

import ast

from verifiers import pyast

KEEP_FUNCTIONS = ("get_inputs", "get_init_inputs")


def _names(nodes: list[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def runner_problem(source: str) -> str:
    """`source` without the reference's forward (and whatever only it used)."""
    tree = pyast.parse(source)
    defs: dict[str, ast.stmt] = {}
    kept: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            node.body = [
                n
                for n in node.body
                if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                or n.name == "__init__"
            ] or [ast.Pass()]
            kept.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in KEEP_FUNCTIONS:
                kept.append(node)
            else:
                defs[node.name] = node
        else:
            kept.append(node)
    # helpers the kept code uses, transitively
    used = _names(kept)
    todo = [n for n in used if n in defs]
    keep_defs: set[str] = set()
    while todo:
        name = todo.pop()
        if name in keep_defs:
            continue
        keep_defs.add(name)
        todo += [n for n in _names([defs[name]]) if n in defs and n not in keep_defs]
    tree.body = [n for n in tree.body if n in kept or getattr(n, "name", None) in keep_defs]
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
