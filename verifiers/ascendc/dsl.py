"""pyasc DSL candidates on the host: what may appear in the file (read as an AST, never
run here), and what a lowering failure means in the taxonomy.

The file may import `asc` (and its submodules) and `math`, define functions (decorated with
`asc.jit` only) and module constants. No PyTorch, torch_npu, aclnn or NumPy: the kernel is
the NPU's work, and a fallback to a framework is the cheat the benchmark's own harness
checks for. No path to the interpreter's machinery (os, subprocess, ctypes, `__import__`,
dunder attributes, `asc.runtime` / `asc.lib` / `asc._C`): the lowering runs in the sandbox
anyway, but a kernel has no use for them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from verifiers import pyast
from verifiers.contract import Status

ALLOWED_IMPORTS = ("asc", "math", "typing", "__future__")
FALLBACK_MODULES = ("torch", "torch_npu", "aclnn", "numpy", "tensorflow", "mindspore", "jax")
FORBIDDEN_CALLS = (
    "eval",
    "exec",
    "compile",
    "__import__",
    "open",
    "getattr",
    "setattr",
    "delattr",
    "globals",
    "locals",
    "vars",
    "breakpoint",
    "input",
)
FORBIDDEN_ASC = ("runtime", "lib", "_C", "codegen")  # asc.<these>: the toolchain, not the DSL


@dataclass(frozen=True)
class Finding:
    status: str
    code: str
    line: int | None
    message: str


def check_source(code: str, kernel: str) -> Finding | None:
    """The first reason this file is not a pyasc kernel file we lower, or None."""
    try:
        tree = pyast.parse(code)
    except SyntaxError as e:
        return Finding(Status.COMPILE_ERROR, "syntax_error", e.lineno, f"Python syntax: {e.msg}")
    for node in ast.walk(tree):
        line = getattr(node, "lineno", None)
        if isinstance(node, ast.Import | ast.ImportFrom):
            mods = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for m in mods:
                root = m.split(".")[0]
                if root in FALLBACK_MODULES:
                    return Finding(
                        Status.REJECTED,
                        "torch_fallback",
                        line,
                        f"imports {m}: the kernel must compute on the NPU in AscendC, "
                        "not fall back to a framework",
                    )
                if root not in ALLOWED_IMPORTS or (root == "asc" and _forbidden_asc(m)):
                    return Finding(
                        Status.REJECTED,
                        "forbidden_import",
                        line,
                        f"imports {m}: a pyasc kernel file imports only "
                        f"{', '.join(ALLOWED_IMPORTS[:2])} (asc's DSL)",
                    )
        elif isinstance(node, ast.Name) and node.id in FALLBACK_MODULES:
            return Finding(
                Status.REJECTED,
                "torch_fallback",
                line,
                f"uses {node.id}: the kernel must not fall back to a framework",
            )
        elif isinstance(node, ast.Name) and node.id.startswith("__") and node.id != "__name__":
            return Finding(
                Status.REJECTED,
                "forbidden_call",
                line,
                f"reaches {node.id}: not part of a kernel",
            )
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in FORBIDDEN_CALLS:
                return Finding(
                    Status.REJECTED,
                    "forbidden_call",
                    line,
                    f"calls {node.func.id}(): not part of a kernel",
                )
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("__") and node.attr.endswith("__"):
                return Finding(
                    Status.REJECTED,
                    "forbidden_call",
                    line,
                    f"reaches {node.attr}: not part of a kernel",
                )
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "asc"
                and node.attr in FORBIDDEN_ASC
            ):
                return Finding(
                    Status.REJECTED,
                    "forbidden_call",
                    line,
                    f"reaches asc.{node.attr}: the toolchain, not the DSL",
                )
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for d in getattr(node, "decorator_list", []):
                if not _is_jit(d):
                    return Finding(
                        Status.REJECTED,
                        "forbidden_call",
                        d.lineno,
                        f"decorator {ast.unparse(d)!r}: only @asc.jit",
                    )
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kernel]
    if not defs or not any(_is_jit(d) for d in defs[-1].decorator_list):
        return Finding(
            Status.FORMAT_ERROR,
            "missing_entry_point",
            None,
            f"the candidate does not define the kernel `@asc.jit def {kernel}(...)`",
        )
    return None


def _forbidden_asc(module: str) -> bool:
    parts = module.split(".")
    return len(parts) > 1 and parts[1] in FORBIDDEN_ASC


def _is_jit(d: ast.expr) -> bool:
    target = d.func if isinstance(d, ast.Call) else d
    ok = isinstance(target, ast.Attribute) and target.attr == "jit"
    ok = ok and isinstance(target.value, ast.Name) and target.value.id == "asc"
    if ok and isinstance(d, ast.Call):
        ok = not d.args and all(isinstance(k.value, ast.Constant) for k in d.keywords)
    return ok


# --- lowering failures ----------------------------------------------------------------------
# pyasc's errors (the code generator's CodegenError with the Python exception it wrapped,
# the MLIR verifier's and passes' messages) in the failure classes of AscendKernelGen's
# analysis: API signature / overload, types and casts, scope and lifetime, memory objects.
_CLASSES = (
    (
        "api_signature",
        re.compile(
            r"has no attribute|missing \d+ required|takes \d+ positional|unexpected keyword|"
            r"got multiple values|is not callable|no overload|not supported for|"
            r"unsupported operand type|positional argument|arguments? (?:count|number)|"
            r"Invalid number of",
            re.I,
        ),
    ),
    (
        "type_cast",
        re.compile(
            r"dtype|data ?type|cannot (?:be )?(?:cast|convert)|type mismatch|must be (?:a|an) "
            r"\w*(?:int|float|Tensor|type)|expected type|incompatible type|TypeError",
            re.I,
        ),
    ),
    (
        "scope_lifetime",
        re.compile(
            r"is not defined|undefined|not found in (?:scope|the scope)|referenced before|"
            r"NameError|UnboundLocal|out of scope|used before",
            re.I,
        ),
    ),
    (
        "memory_object",
        re.compile(
            r"GlobalTensor|LocalTensor|TQue|TBuf|TPipe|buffer|queue|alloc|position|set_global_buffer|"
            r"address",
            re.I,
        ),
    ),
)


# pyasc's overload dispatcher: no overload takes these arguments. A Python float among them
# (where every overload wants an int count) is a type error; else the call's shape is wrong
_DISPATCH = re.compile(r"No viable candidates were found to dispatch")
_PROVIDED = re.compile(r"Provided arguments:\s*\(([^)]*)\)")


def classify_lowering(err_type: str, message: str) -> str:
    """The taxonomy code of one lowering failure (`lowering_failed` if none of the classes)."""
    text = f"{err_type}: {message}"
    if _DISPATCH.search(text):
        provided = _PROVIDED.search(text)
        given = re.split(r"\s*,\s*", provided[1]) if provided else []
        return "type_cast" if "float" in given else "api_signature"
    for code, pattern in _CLASSES:
        if pattern.search(text):
            return code
    return "lowering_failed"


def headline(message: str) -> str:
    """The line of a lowering failure that says what failed: the dispatcher's "no viable
    candidates" line (its message goes on to list every overload), else the last line."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    return next((ln for ln in lines if _DISPATCH.search(ln)), lines[-1] if lines else "")


LOWER_STATUS = Status.COMPILE_ERROR  # a kernel that does not lower does not build
