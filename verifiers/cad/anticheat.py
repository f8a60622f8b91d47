"""Static rules for CAD scripts: named, each with a one-line rationale (`RULES`).

A part script needs CadQuery, math and little else: it builds a shape and leaves it in
`result`. The rules are allow-lists where Python lets them be: imports from a short list
of modules, attribute names that are no module the allowed ones happen to import (so
`cq.exporters.os`, `cq.occ_impl.shapes.warnings.sys` or `numpy.ctypeslib.ctypes` do not
reach os, sys or ctypes), no dunder or private attribute but a few, no method protocol
override but a few, `getattr` only with a literal name that passes the same rules.

Defence in depth: the build process holds neither the reference nor any other
candidate's text (its parent, the build server, never had them), its sandbox has no
network and sees none of the host's files, and a pass needs geometry the judge measured
itself. These rules refuse the scripts that try anyway, with the reason in the feedback.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass

from verifiers import pyast

ALLOWED_IMPORTS = frozenset(
    {"cadquery", "cq", "math", "numpy", "itertools", "functools", "typing", "dataclasses",
     "enum", "collections", "fractions", "decimal", "OCP", "__future__"}
)  # fmt: skip
# submodules of allowed packages that touch files, processes or the system
FORBIDDEN_SUBMODULES = frozenset(
    {"cadquery.occ_impl.exporters", "cadquery.occ_impl.importers", "cadquery.exporters",
     "cadquery.importers", "cadquery.occ_impl.jupyter_tools", "cadquery.vis",
     "cadquery.cq_directive",
     "numpy.ctypeslib", "numpy.lib", "numpy.testing", "numpy.f2py", "numpy.distutils",
     "numpy.core", "numpy.compat", "OCP.OSD", "OCP.Resource", "OCP.Draw", "OCP.Message",
     "OCP.FSD", "OCP.Storage", "OCP.PCDM", "OCP.LDOM", "OCP.OSD_File"}
)  # fmt: skip
# Attribute names that name a module: every module the allowed ones import is reachable
# as an attribute of them (`cq.exporters.os`), so an attribute named like a module that is
# not allowed is refused on any object. Names of harmless leaf modules that are also
# common method names (`copy`, `units`, `string` ...) stay allowed; a test recomputes the
# reachable module names and checks each is here or in HARMLESS_MODULE_ATTRS.
_EXTRA_MODULE_ATTRS = {
    "ET", "StringIO", "bltns", "ca", "charset_normalizer", "client", "ezdxf", "factory",
    "nlopt", "sp", "stdlib_re", "trame", "v3", "vtk", "vtk_widgets", "zoom", "exporters",
    "importers", "ctypeslib", "testing", "f2py", "distutils", "lib", "core", "compat",
    "jupyter_tools", "vis", "occ_impl", "OSD", "Resource", "Draw", "Message", "PCDM",
    "FSD", "Storage", "LDOM",
}  # fmt: skip
HARMLESS_MODULE_ATTRS = frozenset(
    {"copy", "units", "string", "numbers", "operator", "abc", "keyword", "textwrap", "math",
     "cmath", "random", "statistics", "itertools", "functools", "typing", "dataclasses",
     "enum", "collections", "fractions", "decimal", "selectors", "sketch", "hull", "utils",
     "assembly", "cq", "geom", "shapes", "occ_impl_shapes", "bisect", "heapq", "colorsys",
     "ma", "emath", "N"}  # numpy's masked arrays, complex math, numeric (file I/O refused)
)  # fmt: skip
MODULE_ATTRS = frozenset(
    (set(sys.stdlib_module_names) | _EXTRA_MODULE_ATTRS) - HARMLESS_MODULE_ATTRS
)
FORBIDDEN_CALLS = frozenset(
    {"open", "exec", "eval", "compile", "__import__", "globals", "locals", "vars",
     "breakpoint", "input", "memoryview", "setattr", "delattr", "help", "exit", "quit"}
)  # fmt: skip
DUNDERS_ALLOWED = frozenset({"__init__", "__name__", "__future__"})
DUNDER_DEFS_ALLOWED = frozenset({"__init__", "__post_init__", "__repr__", "__str__"})
NAMES_ALLOWED = frozenset({"__name__"})  # dunder names a script may read
INTROSPECTION_ATTRS = frozenset(
    {"f_back", "f_globals", "f_locals", "f_builtins", "f_code", "gi_frame", "gi_code",
     "cr_frame", "ag_frame", "tb_frame", "tb_next", "co_consts", "co_code", "func_globals",
     "_getframe", "mro"}
)  # fmt: skip
# the script's only output is its shape: the harness writes files, never the script
FILE_IO_ATTRS = frozenset(
    {"export", "exportStep", "exportStl", "exportBrep", "exportBin", "exportSvg", "exportDXF",
     "exportVtk", "exportGLTF", "exportAmf", "export3MF", "importStep", "importBrep",
     "importDXF", "importStl", "importBin", "save", "savez", "savez_compressed", "savetxt",
     "load", "loadtxt", "genfromtxt", "fromfile", "tofile", "memmap", "open_memmap",
     "fromregex", "recfromtxt", "recfromcsv", "DataSource", "load_library", "ReadFile",
     "Read_s", "Write_s", "Read", "Write", "dump", "dumps", "tostring", "show_config"}
)  # fmt: skip
_FORMAT_FIELD = re.compile(r"\{[^{}]*(?:\.|\[)[^{}]*\}")  # "{0.attr}" / "{0[key]}"


@dataclass(frozen=True)
class Rule:
    name: str
    code: str  # the verdict's taxonomy code (verifiers/taxonomy.py)
    rationale: str


IMPORT, CALL = "forbidden_import", "forbidden_call"


RULES = {
    r.name: r
    for r in (
        Rule(
            "forbidden_import",
            IMPORT,
            "a part script needs cadquery and math; other modules reach files, processes "
            "or the harness",
        ),
        Rule(
            "forbidden_call",
            CALL,
            "file access, dynamic code and introspection have no place in a part script; "
            "they are how a script would look for the reference",
        ),
        Rule(
            "module_attribute",
            CALL,
            "an attribute named like a module reaches the modules CadQuery and numpy import "
            "(os, sys, ctypes ...) through theirs",
        ),
        Rule(
            "dunder_attribute",
            CALL,
            "dunder and private attributes (__class__, __dict__, __globals__, _os ...) are "
            "the way from an object to the interpreter's internals",
        ),
        Rule(
            "dunder_name",
            CALL,
            "__builtins__, __loader__, __spec__ ... hand a script the interpreter's own objects",
        ),
        Rule(
            "introspection",
            CALL,
            "frames, code objects and the method resolution order lead to other scopes' "
            "variables and to every class in the process",
        ),
        Rule(
            "dynamic_attribute",
            CALL,
            "getattr/hasattr with a computed name, or type() with three arguments, hide the "
            "names the other rules read",
        ),
        Rule(
            "protocol_override",
            CALL,
            "a result object that overrides comparison, attribute or class protocols lies to "
            "the harness that reads it",
        ),
        Rule(
            "file_io", CALL, "the script's only output is its shape; the harness writes the files"
        ),
        Rule(
            "format_field_access",
            CALL,
            "a format field ('{0.__class__}') reads attributes at run time, out of the rules' "
            "sight",
        ),
    )
}


@dataclass(frozen=True)
class Finding:
    name: str  # the rule's
    line: int
    what: str

    @property
    def rule(self) -> str:
        """The taxonomy code of the rule broken."""
        return RULES[self.name].code

    @property
    def why(self) -> str:
        return RULES[self.name].rationale


def _attr_rule(name: str, receiver: ast.expr | None = None) -> str | None:
    """The rule an attribute name breaks, or None."""
    if name.startswith("__") and name.endswith("__"):
        return None if name in DUNDERS_ALLOWED else "dunder_attribute"
    if name.startswith("_"):
        own = isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")
        return None if own else "dunder_attribute"
    if name in INTROSPECTION_ATTRS:
        return "introspection"
    if name in MODULE_ATTRS:
        return "module_attribute"
    if name in FILE_IO_ATTRS:
        return "file_io"
    return None


def _import_rule(module: str) -> bool:
    """True when `module` (dotted) may be imported."""
    if module.split(".")[0] not in ALLOWED_IMPORTS:
        return False
    parts = module.split(".")
    prefixes = {".".join(parts[: i + 1]) for i in range(len(parts))}
    if prefixes & FORBIDDEN_SUBMODULES:
        return False
    return not any(_attr_rule(p) for p in parts[1:])


def _check(node: ast.AST) -> list[Finding]:
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Import):
        return [
            Finding("forbidden_import", line, f"imports {a.name}")
            for a in node.names
            if not _import_rule(a.name)
        ]
    if isinstance(node, ast.ImportFrom):
        mod = node.module or ""
        bad = node.level or not _import_rule(mod)
        bad = bad or any(a.name == "*" or not _import_rule(f"{mod}.{a.name}") for a in node.names)
        return [Finding("forbidden_import", line, f"imports from {mod or '.'}")] if bad else []
    if isinstance(node, ast.Attribute):
        rule = _attr_rule(node.attr, node.value)
        return [Finding(rule, line, f"reads .{node.attr}")] if rule else []
    if isinstance(node, ast.Name):
        if node.id.startswith("__") and node.id not in NAMES_ALLOWED:
            return [Finding("dunder_name", line, f"reads {node.id}")]
        return []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        n = node.name
        if n.startswith("__") and n.endswith("__") and n not in DUNDER_DEFS_ALLOWED:
            return [Finding("protocol_override", line, f"defines {n}")]
        return []
    if isinstance(node, ast.Assign):  # `__eq__ = f` in a class body
        return [
            Finding("protocol_override", line, f"assigns {t.id}")
            for t in node.targets
            if isinstance(t, ast.Name) and t.id.startswith("__") and t.id not in NAMES_ALLOWED
        ]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if _FORMAT_FIELD.search(node.value):
            return [Finding("format_field_access", line, "a format field with . or [ ]")]
        return []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _check_call(node, node.func.id, line)
    return []


def _check_call(node: ast.Call, fn: str, line: int) -> list[Finding]:
    if fn in FORBIDDEN_CALLS:
        return [Finding("forbidden_call", line, f"calls {fn}()")]
    if fn in ("getattr", "hasattr"):
        name = node.args[1] if len(node.args) > 1 else None
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return [Finding("dynamic_attribute", line, f"{fn}() with a computed name")]
        rule = _attr_rule(name.value)
        return [Finding(rule, line, f"{fn}(..., {name.value!r})")] if rule else []
    if fn == "type" and len(node.args) + len(node.keywords) > 1:
        return [Finding("dynamic_attribute", line, "type() with three arguments")]
    return []


def scan(code: str) -> list[Finding]:
    """Rule violations, in source order; a syntax error is left to the build gate."""
    try:
        tree = pyast.parse(code)
    except SyntaxError:
        return []
    found = [f for node in ast.walk(tree) for f in _check(node)]
    return sorted(found, key=lambda f: f.line)
