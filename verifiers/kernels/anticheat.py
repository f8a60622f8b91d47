"""Static anti-cheat for kernel candidates: rules over the Python AST (and the C++ of an
extension), each with its rationale. Stdlib only; nothing of the candidate runs.

Code inside `@triton.jit` functions and inside CUDA source strings is kernel code and is
exempt from the torch rules, never from the introspection ones (Triton's interpreter runs a
kernel's body as plain Python). A function is a kernel only when its decorators resolve to
the real `triton.jit` / `triton.autotune` / `triton.heuristics` through imports that are
never rebound; a home-made `jit` is an ordinary function. Everywhere else (forward and its
helpers) the candidate may allocate, read shapes and strides, make views and launch
kernels, nothing more. Names are allow-lists where Python allows: the imports, the
builtins, the dunder attributes a module may touch.

Only code that runs is judged: what runs at import (top-level statements, class bodies,
decorators and default values) and the bodies reachable from the entry class by name (its
methods, the module-level functions and classes they name, transitively, the Triton
kernels they launch). A module-level `get_inputs` that nothing names never runs, so its
`torch.rand` is no finding; the same call in forward is. The C++ judged is what gets
compiled: CUDA_SRC, what load_inline is given (through the names bound to it) and C++-like
literals in judged code, with its comments blanked.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

from verifiers import pyast

# code -> why the rule exists (shown in the verdict's feedback)
RULES: dict[str, str] = {
    "torch_fallback": (
        "calls the PyTorch operation the task asks to implement (or an nn submodule / "
        "torch.nn.functional): the output would come from PyTorch, not from the kernel"
    ),
    "torch_compute": (
        "computes with torch outside the kernels (tensor math, operators on tensors, dtype "
        "conversions): part of the result would come from PyTorch, and the timing would "
        "credit the kernel with PyTorch's work"
    ),
    "try_except_fallback": (
        "catches exceptions: a kernel that fails to compile or launch could silently fall "
        "back to another path, and the verdict would judge the fallback"
    ),
    "reads_reference": (
        "reaches the reference (the name Model, the problem module) or introspects the "
        "caller (inspect, gc, frames, globals, __dict__, builtins): it could copy the "
        "reference's output instead of computing it"
    ),
    "timing_games": (
        "touches timing or global state (time, CUDA events, streams, synchronize, "
        "torch.backends, monkeypatching module attributes, `global`, caching results on "
        "self): it could fake or skew the measured speed"
    ),
    "forbidden_import": (
        "imports a module a kernel has no use for (os, sys, subprocess, ctypes, threading, "
        "...): the harness allows torch, triton, math, numpy and typing helpers"
    ),
    "side_stream": (
        "runs work on a stream other than the current one (creates a stream, takes one "
        "from a pool, points cuBLAS/cuDNN or a launch at it): the timer measures the "
        "current stream, so the work escapes the timing and the output may be read early"
    ),
}

ALLOWED_IMPORTS = {
    "torch",
    "torch.nn",
    "torch.nn.functional",  # imported for weight-holder types; calling F.* is a fallback
    "torch.utils.cpp_extension",
    "triton",
    "triton.language",
    "triton.language.extra",
    "triton.language.extra.libdevice",
    "triton.language.extra.cuda",
    "triton.language.extra.cuda.libdevice",
    "math",
    "numpy",
    "typing",
    "functools",  # only partial; caches are timing games (checked below)
    "dataclasses",
    "__future__",
}
# torch functions forward may call: allocation and metadata, nothing that computes values
ALLOWED_TORCH_CALLS = {
    "empty",
    "empty_like",
    "empty_strided",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "device",
    "Size",
    "finfo",
    "iinfo",
    "no_grad",
    "inference_mode",
    "is_tensor",
    "is_floating_point",
    "get_default_dtype",
    "cuda.current_device",
    "cuda.is_available",
    "cuda.get_device_properties",
    "nn.Parameter",
    "utils.cpp_extension.load_inline",
}
# tensor methods forward may call: metadata, views, allocation, in-place constant fills
HARMLESS_METHODS = {
    "size",
    "stride",
    "numel",
    "dim",
    "ndimension",
    "element_size",
    "data_ptr",
    "is_contiguous",
    "contiguous",
    "view",
    "view_as",
    "reshape",
    "reshape_as",
    "flatten",
    "unflatten",
    "unsqueeze",
    "squeeze",
    "expand",
    "expand_as",
    "narrow",
    "select",
    "chunk",
    "split",
    "unbind",
    "new_empty",
    "new_zeros",
    "new_ones",
    "new_full",
    "zero_",
    "fill_",
    "get_device",
    "item",
    "tolist",
    "parameters",
    "named_parameters",
    "state_dict",
    "keys",
    "values",
    "items",
    "append",
    "extend",
    "get",
    "format",
    "join",
    "startswith",
    "endswith",
    "bit_length",
    "run",  # kernel.run / autotuner
    "warmup",
}
# tensor methods that compute (a candidate computing with them is `torch_compute`)
COMPUTE_METHODS = {
    "abs",
    "add",
    "add_",
    "addmm",
    "addmv",
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "baddbmm",
    "bfloat16",
    "bmm",
    "cat",
    "ceil",
    "clamp",
    "clamp_",
    "clip",
    "clone",
    "copy_",
    "cos",
    "cumprod",
    "cumsum",
    "detach",
    "div",
    "div_",
    "double",
    "dot",
    "einsum",
    "eq",
    "erf",
    "exp",
    "exp_",
    "expm1",
    "float",
    "floor",
    "flip",
    "gather",
    "ge",
    "gelu",
    "gt",
    "half",
    "index_add",
    "index_select",
    "int",
    "le",
    "lerp",
    "log",
    "log1p",
    "log_softmax",
    "logsumexp",
    "long",
    "lt",
    "masked_fill",
    "masked_fill_",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mm",
    "mul",
    "mul_",
    "mv",
    "nan_to_num",
    "ne",
    "neg",
    "norm",
    "permute",
    "pow",
    "prod",
    "reciprocal",
    "relu",
    "relu_",
    "repeat",
    "roll",
    "round",
    "rsqrt",
    "scatter",
    "scatter_add",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "softmax",
    "sort",
    "sqrt",
    "square",
    "std",
    "sub",
    "sub_",
    "sum",
    "t",
    "tanh",
    "to",
    "topk",
    "transpose",
    "tril",
    "triu",
    "type",
    "var",
    "where",
    "T",
    "mT",
    "H",
}
INTROSPECTION = {
    "inspect",
    "gc",
    "sys",
    "builtins",
    "__builtins__",
    "globals",
    "locals",
    "vars",
    "__import__",
    "exec",
    "eval",
    "compile",
    "open",
    "importlib",
    "setattr",
    "delattr",
    "breakpoint",
    "input",
    "memoryview",
}
DUNDER_ATTRS = {
    "__dict__",
    "__globals__",
    "__class__",
    "__subclasses__",
    "__bases__",
    "__mro__",
    "__code__",
    "__closure__",
    "__builtins__",
    "__loader__",
    "__spec__",
    "__module__",
    "__self__",
    "__func__",
    "__getattribute__",
    "__setattr__",
    "__import__",
    "f_back",
    "f_locals",
    "f_globals",
    "_getframe",
    "gi_frame",
    "tb_frame",
}
# The named introspection checks (all reported as `reads_reference`): what each one stops.
INTROSPECTION_CHECKS: dict[str, str] = {
    "builtin_not_allowed": (
        "a builtin outside the allow-list (open, exec, eval, vars, globals, __import__, "
        "getattr as a value ...): it reads files or reaches objects by computed names"
    ),
    "dunder_attribute": (
        "a dunder attribute other than __init__ / __name__ / __doc__: __dict__, __globals__, "
        "__subclasses__, __builtins__ ... walk from any object to every module loaded"
    ),
    "frame_attribute": (
        "frame and traceback objects (f_back, f_globals, tb_frame, gi_frame, _getframe) "
        "reach the harness's locals"
    ),
    "module_attribute": (
        "a module reached as an attribute (torch.sys, torch.os, np.ctypeslib, typing.sys): "
        "the imports are an allow-list, and this walks round it"
    ),
    "private_api": (
        "a private attribute of a library (torch._C, triton._C, np.core._...): interpreter "
        "and runtime internals, not kernel API"
    ),
    "file_access": (
        "reads or writes files through a library (torch.load, np.fromfile, .tofile, "
        "torch.from_file, cpp_extension.load): a kernel computes from its inputs alone"
    ),
    "computed_getattr": (
        "getattr / hasattr with a computed name, or with a name another check forbids"
    ),
}
ALLOWED_BUILTINS = {
    "abs", "all", "any", "bool", "callable", "classmethod", "dict", "divmod", "enumerate",
    "filter", "float", "format", "frozenset", "getattr", "hasattr", "int", "isinstance",
    "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "pow",
    "print", "property", "range", "repr", "reversed", "round", "set", "slice", "sorted",
    "staticmethod", "str", "sum", "super", "tuple", "zip", "NotImplemented", "Ellipsis",
}  # fmt: skip
ALLOWED_DUNDERS = {"__init__", "__name__", "__doc__"}
FRAME_ATTRS = {
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "f_trace", "gi_frame",
    "gi_code", "cr_frame", "ag_frame", "tb_frame", "tb_next", "_getframe",
    "_current_frames", "co_consts",
}  # fmt: skip
# modules that other modules re-export as attributes (torch.sys is sys)
MODULE_ATTRS = {
    "sys", "os", "posix", "subprocess", "ctypes", "ctypeslib", "cffi", "gc", "inspect",
    "importlib", "builtins", "socket", "shutil", "pathlib", "io", "threading", "_thread",
    "multiprocessing", "concurrent", "signal", "linecache", "marshal", "pickle", "weakref",
    "runpy", "pkgutil", "traceback", "tempfile", "glob", "mmap", "resource", "fcntl",
    "select", "selectors", "asyncio", "urllib", "http", "platform", "sysconfig", "site",
    "atexit", "faulthandler", "operator", "copyreg", "code", "codeop", "dis", "ast",
    "zipimport", "pty", "tracemalloc", "hub", "serialization",
}  # fmt: skip
FILE_IO_ATTRS = {
    "load", "save", "fromfile", "tofile", "loadtxt", "savetxt", "genfromtxt", "memmap",
    "from_file", "load_library", "open", "fdopen", "DataLoader",
}  # fmt: skip
LIBRARY_ROOTS = ("torch", "triton", "numpy", "math", "typing", "functools", "dataclasses")
# decorators that make a function a Triton kernel (resolved through the imports)
TRITON_DECORATORS = {"triton.jit", "triton.autotune", "triton.heuristics"}
# what a candidate claims is a kernel, by name: the runner checks each of these at run time
CLAIMED_KERNEL_DECORATORS = ("jit", "autotune", "heuristics", "njit")
TIMING_NAMES = {
    "time",
    "perf_counter",
    "monotonic",
    "Event",
    "synchronize",
    "current_stream",
    "default_stream",
    "backends",
    "testing",
    "do_bench",
    "CUDAGraph",
    "graph",
    "lru_cache",
    "cache",
    "cached_property",
    "profiler",
    "set_flush_denormal",
    "use_deterministic_algorithms",
    "set_float32_matmul_precision",
}
# torch.* / triton.* names that make or switch to another stream (`side_stream`)
STREAM_NAMES = {
    "Stream",
    "stream",
    "set_stream",
    "ExternalStream",
    "StreamContext",
    "get_stream_from_external",
}
# nvcc flags (in a Python string) that move every launch to a per-thread stream
_PER_THREAD_FLAG = re.compile(r"default-stream[\s=]*per-thread|CUDA_API_PER_THREAD_DEFAULT_STREAM")
# C++ that makes, picks or switches to a stream other than the current one: what each means
CPP_STREAM_APIS: dict[str, str] = {
    r"\bcu(?:da)?StreamCreate\w*": "creates a stream",
    r"\bgetStreamFromPool\b": "takes a stream from PyTorch's pool",
    r"\bgetStreamFromExternal\b": "wraps an external stream",
    r"\bsetCurrentCUDAStream\b": "changes PyTorch's current stream",
    r"\b\w*CUDA(?:Multi)?StreamGuard\b": "switches the current stream with a guard",
    r"\bcudaStreamPerThread\b|\bCU_STREAM_PER_THREAD\b": "uses the per-thread stream",
    r"\bcudaStreamNonBlocking\b|\bCU_STREAM_NON_BLOCKING\b": "asks for a non-blocking stream",
    r"\bCUDA_API_PER_THREAD_DEFAULT_STREAM\b": "makes the default stream per-thread",
    r"(?:\(\s*cudaStream_t\s*\)|_cast\s*<\s*cudaStream_t\s*>\s*\()\s*(?:0[xX]0*)?[1-9]": (
        "casts a number to a stream handle"
    ),
}
NN_CONTAINERS = {"Parameter", "ParameterList", "ParameterDict", "ModuleList", "ModuleDict"}
# C++ torch calls an extension may make: allocation, metadata, checks
_CPP_ALLOWED = {
    "empty",
    "empty_like",
    "empty_strided",
    "zeros",
    "zeros_like",
    "ones",
    "full",
    "TensorOptions",
    "Tensor",
    "kFloat",
    "kHalf",
    "kBFloat16",
    "kInt",
    "kLong",
    "kCUDA",
    "kFloat32",
    "kFloat16",
    "kInt32",
    "kInt64",
    "Device",
    "ScalarType",
    "IntArrayRef",
    "dtype",
    "device",
    "cuda",
    "Scalar",
}
_CPP_TORCH_CALL = re.compile(r"\b(?:torch|at)::(\w+)(?:::(\w+))?\s*\(")


@dataclass(frozen=True)
class Finding:
    code: str
    line: int
    what: str
    check: str = ""  # a named check of INTROSPECTION_CHECKS, when one tripped

    def message(self) -> str:
        why = INTROSPECTION_CHECKS.get(self.check) or RULES[self.code]
        return f"line {self.line}: {self.what} [{self.code}: {why}]"


def reference_ops(problem_source: str) -> set[str]:
    """Names of the functions and methods the reference Model's forward calls."""
    try:
        tree = pyast.parse(problem_source)
    except SyntaxError:
        return set()
    ops: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                    for sub in ast.walk(fn):
                        if isinstance(sub, ast.Call):
                            name = _tail_name(sub.func)
                            if name:
                                ops.add(name)
    return ops - HARMLESS_METHODS - {"super"}


def _tail_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def claimed_kernels(code: str) -> list[str]:
    """Module-level functions whose decorator *names* say kernel (`@jit`, `@x.autotune`):
    the runner checks at run time that each is a real Triton kernel object."""
    try:
        tree = pyast.parse(code)
    except SyntaxError:
        return []
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if (_dotted(target) or "").split(".")[-1] in CLAIMED_KERNEL_DECORATORS:
                    out.append(node.name)
                    break
    return out


def _bindings(tree: ast.Module) -> dict[str, set[str]]:
    """name -> what binds it anywhere in the module: the dotted module path of an import,
    or "" for any other binding (assignment, def, class, parameter, loop target...)."""
    out: dict[str, set[str]] = {}

    def bind(name: str, what: str) -> None:
        out.setdefault(name, set()).add(what)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    bind(a.asname, a.name)
                else:
                    root = a.name.split(".")[0]
                    bind(root, root)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                bind(a.asname or a.name, f"{node.module or ''}.{a.name}")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bind(node.id, "")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name, "")
        elif isinstance(node, ast.arg):
            bind(node.arg, "")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bind(node.name, "")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for n in node.names:
                bind(n, "")
        elif isinstance(node, ast.alias) and node.name == "*":
            bind("*", "")
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bind(node.name, "")  # `case triton:` rebinds triton like an assignment
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bind(node.rest, "")
    return out


# --- what runs: import-time code, and the bodies reachable from the entry class ------------
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# decorators that neither call the function nor hand it to anyone at import
_PLAIN_DECORATORS = {"staticmethod", "classmethod", "property", "setter", "getter", "deleter"}


def _is_main_guard(node: ast.AST, bindings: dict[str, set[str]]) -> bool:
    """`if __name__ == "__main__":` while nothing rebinds __name__: its body never runs
    (the runner loads the candidate under its own module name)."""
    if not isinstance(node, ast.If) or "__name__" in bindings or "*" in bindings:
        return False
    t = node.test
    if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq)):
        return False
    name, value = t.left, t.comparators[0]
    if isinstance(value, ast.Name):
        name, value = value, name
    return (
        isinstance(name, ast.Name)
        and name.id == "__name__"
        and isinstance(value, ast.Constant)
        and value.value == "__main__"
    )


def _scope_defs(stmts: list[ast.stmt], bindings: dict[str, set[str]]) -> list[ast.AST]:
    """The defs and classes a block binds in its own scope, inside if/try/with/for/match
    blocks too (not those nested in other defs)."""
    out: list[ast.AST] = []
    for s in stmts:
        if isinstance(s, _DEFS):
            out.append(s)
            continue
        blocks = [s.orelse] if _is_main_guard(s, bindings) else []
        if not blocks:
            for field in ("body", "orelse", "finalbody"):
                blocks.append(getattr(s, field, None) or [])
            blocks += [h.body for h in getattr(s, "handlers", None) or []]
            blocks += [c.body for c in getattr(s, "cases", None) or []]
        for block in blocks:
            out += _scope_defs(block, bindings)
    return out


def _import_time(tree: ast.Module, bindings: dict[str, set[str]]):
    """Every node that runs when the module is imported: all but function bodies (a def
    runs its decorators, defaults and annotations) and a main guard's body."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _FUNCS):
            stack += [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]
        elif _is_main_guard(node, bindings):
            stack += node.orelse
        else:
            stack += ast.iter_child_nodes(node)


def _names(nodes) -> set[str]:
    """Every name the nodes mention: loaded or stored names, attribute names, and string
    constants that are identifiers (a name reached by getattr)."""
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
            out.add(n.value)
    return out


def _handed_on(node: ast.AST) -> bool:
    """A def whose decorators may call it or store it at import (a registry)."""
    for dec in getattr(node, "decorator_list", []):
        name = (_dotted(dec.func if isinstance(dec, ast.Call) else dec) or "").split(".")[-1]
        if isinstance(node, ast.ClassDef) or name not in _PLAIN_DECORATORS:
            return True
    return False


def unreached_bodies(tree: ast.Module, entry: str, bindings: dict[str, set[str]]) -> set[int]:
    """ids of the function nodes whose bodies never run: module-level functions nothing
    reachable names, and the methods of classes nothing reachable names. Everything else
    is judged. Without a module-level entry class, nothing is left out."""
    scope = _scope_defs(tree.body, bindings)
    if not any(isinstance(d, ast.ClassDef) and d.name == entry for d in scope):
        return set()
    by_name: dict[str, list[ast.AST]] = {}
    for d in scope:
        by_name.setdefault(d.name, []).append(d)
    import_time = list(_import_time(tree, bindings))
    todo = [d for d in scope if d.name == entry or d.name.startswith("__")]
    todo += [n for n in import_time if isinstance(n, _DEFS) and _handed_on(n)]
    todo += [d for name in _names(import_time) for d in by_name.get(name, [])]
    reached: set[int] = set()
    while todo:
        d = todo.pop()
        if id(d) not in reached:
            reached.add(id(d))
            todo += [x for name in _names(ast.walk(d)) for x in by_name.get(name, [])]

    skipped: set[int] = set()

    def mark(d: ast.AST, live: bool) -> None:
        live = live or id(d) in reached
        if isinstance(d, ast.ClassDef):
            for sub in _scope_defs(d.body, bindings):
                mark(sub, live)
        elif not live:
            skipped.add(id(d))

    for d in scope:
        mark(d, False)
    return skipped


class _Checker(ast.NodeVisitor):
    def __init__(
        self,
        ref_ops: set[str],
        bindings: dict[str, set[str]] | None = None,
        skipped: set[int] | None = None,
    ):
        self.ref_ops = ref_ops
        self.bindings = bindings or {}
        self.skipped = skipped or set()  # function nodes whose bodies never run
        self.strings: list[ast.Constant] = []  # the string literals of the judged code
        self.extension_sources: list[ast.expr] = []  # what load_inline is given to compile
        self.in_kernel = False
        self._checked_calls: set[int] = set()  # getattr/hasattr calls already judged
        self.findings: list[Finding] = []
        self.aliases: dict[str, str] = {}  # local name -> dotted module/object path
        self.submodules: set[str] = set()  # self.<attr> assigned an nn layer in __init__
        self.tensors: set[str] = set()  # names holding tensors in the current function
        self.fn_stack: list[str] = []

    def add(self, code: str, node: ast.AST, what: str, check: str = "") -> None:
        self.findings.append(Finding(code, getattr(node, "lineno", 0), what, check))

    def resolve(self, node: ast.expr) -> str | None:
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head)
        if base is None:
            return dotted
        return f"{base}.{rest}" if rest else base

    def _trusted(self, head: str) -> str | None:
        """The module path `head` names when its only bindings are imports of that one
        path (never reassigned, redefined or shadowed); None otherwise."""
        kinds = self.bindings.get(head, set())
        if len(kinds) != 1 or "" in kinds or "*" in self.bindings:
            return None
        return next(iter(kinds))

    def is_kernel(self, fn: ast.FunctionDef) -> bool:
        """Every decorator resolves to the real triton.jit / autotune / heuristics."""
        if not fn.decorator_list:
            return False
        for dec in fn.decorator_list:
            dotted = _dotted(dec.func if isinstance(dec, ast.Call) else dec)
            if dotted is None:
                return False
            head, _, rest = dotted.partition(".")
            base = self._trusted(head)
            if base is None:
                return False
            if f"{base}.{rest}".strip(".") not in TRITON_DECORATORS:
                return False
        return True

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._check_import(node, a.name)
            self.aliases[a.asname or a.name.split(".")[0]] = (
                a.name if a.asname else a.name.split(".")[0]
            )

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        self._check_import(node, mod)
        for a in node.names:
            full = f"{mod}.{a.name}"
            if full in ALLOWED_IMPORTS or mod in ALLOWED_IMPORTS:
                self.aliases[a.asname or a.name] = full
            if mod == "functools" and a.name != "partial":
                self.add("timing_games", node, f"imports functools.{a.name} (result caching)")

    def _check_import(self, node: ast.AST, name: str) -> None:
        if name in ALLOWED_IMPORTS:
            return
        root = name.split(".")[0]
        if root in ("inspect", "gc", "sys", "builtins", "importlib"):
            self.add("reads_reference", node, f"imports {name}")
        elif root in ("time", "timeit") or name.startswith("triton.testing"):
            self.add("timing_games", node, f"imports {name}")
        else:
            self.add("forbidden_import", node, f"imports {name}")

    # structure
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.name == "Model":
            self.add("reads_reference", node, "defines a class named Model (the reference's name)")
        for fn in node.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                for sub in ast.walk(fn):
                    if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call):
                        callee = self.resolve(sub.value.func) or ""
                        if (
                            callee.startswith("torch.nn.")
                            and callee.split(".")[-1] not in NN_CONTAINERS
                        ):
                            for t in sub.targets:
                                if isinstance(t, ast.Attribute) and _dotted(t.value) == "self":
                                    self.submodules.add(t.attr)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if id(node) in self.skipped:
            # never called: only what the def statement itself runs is judged
            for part in (*node.decorator_list, node.args, node.returns):
                if part is not None:
                    self.visit(part)
            return
        if self.is_kernel(node):
            # kernel code: tl.* / device code, exempt from the torch rules (not from the
            # introspection ones: the interpreter runs this body as Python)
            saved_kernel, saved_tensors = self.in_kernel, self.tensors
            self.in_kernel, self.tensors = True, set()
            self.fn_stack.append(node.name)
            for stmt in node.body:
                self.visit(stmt)
            self.fn_stack.pop()
            self.in_kernel, self.tensors = saved_kernel, saved_tensors
            return
        for dec in node.decorator_list:
            name = (self.resolve(dec.func if isinstance(dec, ast.Call) else dec) or "").split(".")[
                -1
            ]
            if name in ("lru_cache", "cache", "cached_property"):
                self.add("timing_games", node, f"caches results with @{name}")
        self.fn_stack.append(node.name)
        saved = self.tensors
        self.tensors = {a.arg for a in node.args.args if a.arg != "self"} | {
            a.arg for a in node.args.kwonlyargs
        }
        if node.args.vararg:
            self.tensors.add(node.args.vararg.arg)
        self.generic_visit(node)
        self.tensors = saved
        self.fn_stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    @property
    def in_init(self) -> bool:
        return bool(self.fn_stack) and self.fn_stack[-1] == "__init__"

    @property
    def in_function(self) -> bool:
        return bool(self.fn_stack)

    def visit_Try(self, node: ast.Try) -> None:
        self.add("try_except_fallback", node, "a try/except block")
        self.generic_visit(node)

    visit_TryStar = visit_Try  # type: ignore[assignment]

    def visit_If(self, node: ast.If) -> None:
        if _is_main_guard(node, self.bindings):
            for stmt in node.orelse:  # the guarded body never runs in the runner
                self.visit(stmt)
            return
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self.strings.append(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.add("timing_games", node, f"`global {', '.join(node.names)}` keeps state across calls")

    visit_Nonlocal = visit_Global  # type: ignore[assignment]

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "Model":
            self.add("reads_reference", node, "uses the name Model (the reference class)")
        elif node.id in INTROSPECTION and node.id not in ("getattr", "hasattr"):
            self.add("reads_reference", node, f"uses {node.id}", "builtin_not_allowed")
        elif (
            isinstance(node.ctx, ast.Load)
            and node.id in _BUILTIN_NAMES
            and node.id not in self.bindings
            and id(node) not in self._checked_calls
            and not (node.id in ALLOWED_BUILTINS and node.id not in ("getattr", "hasattr"))
            and not _is_exception_name(node.id)
        ):
            self.add("reads_reference", node, f"uses the builtin {node.id}", "builtin_not_allowed")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        bad = _bad_attribute(node.attr, self.resolve(node.value) or "")
        if bad:
            self.add("reads_reference", node, f"accesses .{node.attr}", bad)
        elif node.attr in DUNDER_ATTRS:
            self.add("reads_reference", node, f"accesses .{node.attr}")
        elif node.attr == "Model":
            self.add("reads_reference", node, "accesses .Model (the reference class)")
        dotted = self.resolve(node) or ""
        library = dotted.startswith(("torch.", "triton.")) and isinstance(node.ctx, ast.Load)
        if library and node.attr in TIMING_NAMES:
            self.add("timing_games", node, f"uses {dotted}")
        elif library and node.attr in STREAM_NAMES:
            self.add("side_stream", node, f"uses {dotted}")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._check_store(t, node)
        self._track(node.targets, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_store(node.target, node)
        if not self.in_kernel and (self._tensorish(node.target) or self._tensorish(node.value)):
            self.add("torch_compute", node, "in-place arithmetic on a tensor")
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_store(node.target, node)
        self.generic_visit(node)

    def _check_store(self, target: ast.expr, node: ast.AST) -> None:
        if isinstance(target, ast.Attribute):
            base = self.resolve(target.value) or ""
            root = base.split(".")[0]
            if root in ("torch", "triton", "math", "numpy") or base in self.aliases.values():
                self.add("timing_games", node, f"assigns {base}.{target.attr} (monkeypatching)")
            elif (
                _dotted(target.value) == "self"
                and self.fn_stack
                and self.fn_stack[-1] not in ("__init__",)
            ):
                self.add(
                    "timing_games",
                    node,
                    f"stores self.{target.attr} outside __init__ (state across calls)",
                )
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._check_store(elt, node)
        elif isinstance(target, ast.Subscript) and self._tensorish(target.value):
            self.add("torch_compute", node, "writes tensor elements from Python")

    def _track(self, targets: list[ast.expr], value: ast.expr) -> None:
        if not self.in_function or self.in_init:
            return
        if self._tensorish(value):
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        self.tensors.add(n.id)

    def _tensorish(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Attribute):
            if _dotted(node.value) == "self" and node.attr in ("weight", "bias"):
                return True
            return node.attr in ("weight", "bias") and isinstance(node.value, ast.Attribute)
        if isinstance(node, ast.Subscript):
            return self._tensorish(node.value)
        if isinstance(node, ast.Call):
            callee = self.resolve(node.func) or ""
            if callee.startswith("torch.") and callee.split(".", 1)[1] in ALLOWED_TORCH_CALLS:
                return callee.split(".")[-1] not in ("device", "Size", "finfo", "iinfo", "no_grad")
            if isinstance(node.func, ast.Attribute) and node.func.attr in (
                "view",
                "reshape",
                "contiguous",
                "flatten",
                "unsqueeze",
                "squeeze",
                "expand",
                "narrow",
                "select",
                "new_empty",
                "new_zeros",
                "view_as",
            ):
                return self._tensorish(node.func.value) or True
        return False

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if not self.in_kernel and self.in_function and not self.in_init:
            if isinstance(node.op, ast.MatMult):
                self.add("torch_compute", node, "the @ operator (a torch matmul)")
            elif self._tensorish(node.left) or self._tensorish(node.right):
                self.add("torch_compute", node, "arithmetic on a tensor outside the kernels")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if (
            not self.in_kernel
            and self.in_function
            and not self.in_init
            and self._tensorish(node.operand)
        ):
            self.add("torch_compute", node, "arithmetic on a tensor outside the kernels")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if not self.in_kernel and (
            self.in_function
            and not self.in_init
            and (self._tensorish(node.left) or any(self._tensorish(c) for c in node.comparators))
        ):
            self.add("torch_compute", node, "compares tensors outside the kernels")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        callee = self.resolve(node.func)
        if (callee or "").split(".")[-1] == "load_inline":
            self.extension_sources += node.args[1:3] + [
                k.value for k in node.keywords if k.arg in ("cpp_sources", "cuda_sources")
            ]
        if callee in ("getattr", "hasattr") and "getattr" not in self.bindings:
            self._checked_calls.add(id(node.func))
            name = node.args[1] if len(node.args) >= 2 else None
            literal = isinstance(name, ast.Constant) and isinstance(name.value, str)
            base = self.resolve(node.args[0]) or "" if node.args else ""
            if not literal:
                self.add(
                    "reads_reference", node, f"{callee} with a computed name", "computed_getattr"
                )
            elif _bad_attribute(name.value, base) or name.value in DUNDER_ATTRS:
                self.add(
                    "reads_reference",
                    node,
                    f"{callee}(..., {name.value!r}) reaches what the attribute rules forbid",
                    "computed_getattr",
                )
            elif name.value == "Model":
                self.add("reads_reference", node, "getattr(..., 'Model'): the reference class")
        if self.in_kernel:
            if callee and callee.split(".")[0] == "torch":
                self.add("torch_compute", node, f"calls {callee} inside a kernel")
        elif not self.in_init and self.in_function:
            self._check_compute_call(node, callee)
        self.generic_visit(node)

    def _check_compute_call(self, node: ast.Call, callee: str | None) -> None:
        func = node.func
        if callee and callee.startswith("torch."):
            rest = callee.split(".", 1)[1]
            if rest in ALLOWED_TORCH_CALLS:
                return
            last = rest.split(".")[-1]
            if rest.startswith(("nn.functional.", "nn.")) or last in self.ref_ops:
                self.add("torch_fallback", node, f"calls {callee}")
            elif last in STREAM_NAMES or (rest.startswith("cuda.") and last in TIMING_NAMES):
                return  # reported by visit_Attribute
            else:
                self.add("torch_compute", node, f"calls {callee}")
            return
        if isinstance(func, ast.Attribute):
            owner = _dotted(func.value)
            if owner == "self" and func.attr in self.submodules:
                self.add("torch_fallback", node, f"calls the nn submodule self.{func.attr}")
                return
            if callee and callee.split(".")[0] in ("triton", "math", "numpy"):
                return
            name = func.attr
            if name in HARMLESS_METHODS:
                if name in self.ref_ops and name in ("contiguous", "reshape", "flatten"):
                    pass  # falls through: the reference's own data movement
                else:
                    return
            if name in self.ref_ops:
                self.add("torch_fallback", node, f"calls .{name}() like the reference")
            elif name in COMPUTE_METHODS:
                self.add("torch_compute", node, f"calls .{name}() on a tensor")
        elif (
            isinstance(func, ast.Name)
            and func.id in self.ref_ops
            and func.id
            not in (
                "len",
                "range",
                "int",
                "float",
                "min",
                "max",
                "tuple",
                "list",
            )
        ):
            self.add("torch_fallback", node, f"calls {func.id} like the reference")


_BUILTIN_NAMES = set(dir(builtins))


def _is_exception_name(name: str) -> bool:
    return name.endswith(("Error", "Exception", "Warning")) or name in (
        "StopIteration",
        "KeyboardInterrupt",
    )


def _bad_attribute(attr: str, base: str) -> str:
    """The named check an attribute trips (`base` is its owner, resolved), or ""."""
    if attr.startswith("__") and attr.endswith("__"):
        return "" if attr in ALLOWED_DUNDERS else "dunder_attribute"
    if attr in FRAME_ATTRS:
        return "frame_attribute"
    if attr in MODULE_ATTRS:
        return "module_attribute"
    root = base.split(".")[0]
    if root in LIBRARY_ROOTS and attr.startswith("_"):
        return "private_api"
    if attr == "tofile" or (attr in FILE_IO_ATTRS and root in ("torch", "numpy")):
        return "file_access"
    if attr == "load" and base.endswith("cpp_extension"):
        return "file_access"
    return ""


def check(code: str, problem_source: str = "", entry: str = "ModelNew") -> list[Finding]:
    """Every rule the code that runs trips (empty: clean). SyntaxError propagates."""
    tree = pyast.parse(code)
    bindings = _bindings(tree)
    skipped = unreached_bodies(tree, entry, bindings)
    checker = _Checker(reference_ops(problem_source), bindings, skipped)
    checker.visit(tree)
    sources = _cpp_sources(tree, checker)
    for node in sources:
        checker.findings += _cpp_findings(_strip_comments(node.value), node.lineno)
    compiled = {id(n) for n in sources}
    for node in checker.strings:
        if id(node) not in compiled and _PER_THREAD_FLAG.search(node.value):
            checker.add("side_stream", node, "asks nvcc for a per-thread default stream")
    seen, out = set(), []
    for f in checker.findings:
        key = (f.code, f.line, f.what)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _cpp_sources(tree: ast.Module, checker: _Checker) -> list[ast.Constant]:
    """The C++ that gets compiled: every string literal in what load_inline is given and
    in CUDA_SRC (through the names bound to them, anywhere), and the literals of the
    judged code that look like C++ (they include a header, a __global__ or torch::)."""
    values: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = [node.target]
        else:
            continue
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    values.setdefault(n.id, []).append(node.value)
    found: dict[int, ast.Constant] = {}
    todo, followed = [*checker.extension_sources, *values.get("CUDA_SRC", [])], set()
    while todo:
        for n in ast.walk(todo.pop()):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                found[id(n)] = n
            elif isinstance(n, ast.Name) and n.id not in followed:
                followed.add(n.id)
                todo += values.get(n.id, [])
    for n in checker.strings:
        if "#include" in n.value or "__global__" in n.value or "torch::" in n.value:
            found[id(n)] = n
    return sorted(found.values(), key=lambda n: (n.lineno, n.col_offset))


# string and character literals are kept whole (a `//` inside one starts no comment)
_CPP_TOKENS = re.compile(
    r'R"(?P<delim>[^()\\\s"]{0,16})\([\s\S]*?\)(?P=delim)"'
    r'|"(?:\\[\s\S]|[^"\\\n])*"'
    r"|'(?:\\[\s\S]|[^'\\\n])*'"
    r"|//[^\n]*"
    r"|/\*[\s\S]*?(?:\*/|\Z)"
)


def _strip_comments(src: str) -> str:
    """`src` with each comment blanked to a space and the newlines it held (so every
    offset keeps its line); an unclosed /* runs to the end, as the compiler reads it."""

    def blank(m: re.Match) -> str:
        t = m.group(0)
        return t if t[0] in "R\"'" else " " + "\n" * t.count("\n")

    return _CPP_TOKENS.sub(blank, src)


_LAUNCH = re.compile(r"<<<([\s\S]*?)>>>")
_SET_STREAM = re.compile(r"\b(\w+SetStream\w*)\b(\s*\()?")
# what names the current stream (or the legacy default one, stream 0)
_CURRENT_STREAM = re.compile(
    r"0[xX]0+|0+[uUlL]*|nullptr|NULL|cudaStreamLegacy|cudaStreamDefault"
    r"|\(\s*cudaStream_t\s*\)\s*(?:0|nullptr)"
    r"|\w+_cast\s*<\s*cudaStream_t\s*>\s*\(\s*(?:0|nullptr)\s*\)"
    r"|(?:(?:at|c10)\s*::\s*cuda\s*::\s*)?get(?:Current|Default)CUDAStream"
    r"\s*\([\w\s.:,()\[\]>-]*\)(?:\s*\.\s*stream\s*\(\s*\))?"
)


def _split_args(text: str, start: int = 0, close: str = "") -> list[str]:
    """The comma-separated arguments from `start` (to `close` at depth 0, or the end)."""
    args, depth, cur = [], 0, start
    for i in range(start, len(text)):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}" and depth:
            depth -= 1
        elif (c == "," and not depth) or (c == close and not depth):
            args.append(text[cur:i].strip())
            cur = i + 1
            if c == close:
                return args
    return [*args, text[cur:].strip()]


def _current_stream(arg: str, src: str, depth: int = 0) -> bool:
    """`arg` is 0 or the current stream: literally, or a variable that only ever holds
    one (never written through its address, every assignment a current stream), or a
    stream parameter nothing assigns."""
    arg = arg.strip()
    if _CURRENT_STREAM.fullmatch(arg):
        return True
    m = re.fullmatch(r"(\w+)(?:\s*\.\s*stream\s*\(\s*\))?", arg)
    if not m or depth > 4:
        return False
    name = re.escape(m.group(1))
    if re.search(rf"[(,=]\s*&\s*{name}\b", src):
        return False  # written by an API (cudaStreamCreate(&s)): whatever it made
    held = re.findall(rf"\b{name}\s*=(?!=)\s*([^;]+?)\s*;", src)
    held += re.findall(
        rf"\b(?:cudaStream_t|CUDAStream|auto)\s+{name}\s*[({{]([^;]*?)[)}}]\s*;", src
    )
    if held:
        return all(_current_stream(h, src, depth + 1) for h in held)
    return (
        re.search(rf"\b(?:cudaStream_t|CUDAStream)\s*(?:const\s*)?&?\s*{name}\b", src) is not None
    )


def _cpp_findings(text: str, first_line: int) -> list[Finding]:
    """What one C++ source (comments blanked) trips: torch ops (torch_fallback) and work
    sent to another stream (side_stream)."""
    out = []

    def line(pos: int) -> int:
        return first_line + text.count("\n", 0, pos)

    for m in _CPP_TORCH_CALL.finditer(text):
        name = m.group(2) or m.group(1)
        if m.group(1) not in _CPP_ALLOWED and name not in _CPP_ALLOWED:
            out.append(
                Finding(
                    "torch_fallback",
                    line(m.start()),
                    f"C++ calls {m.group(0).rstrip('(').rstrip()}",
                )
            )
    for pattern, what in CPP_STREAM_APIS.items():
        for m in re.finditer(pattern, text):
            out.append(Finding("side_stream", line(m.start()), f"C++ {what} ({m.group(0)})"))
    for m in _SET_STREAM.finditer(text):
        args = _split_args(text, m.end(), ")") if m.group(2) else []
        if len(args) < 2 or not _current_stream(args[1], text):
            what = f"C++ {m.group(1)} points a library handle at a stream not the current one"
            out.append(Finding("side_stream", line(m.start()), what))
    for m in _LAUNCH.finditer(text):
        args = _split_args(m.group(1))
        if len(args) >= 4 and not _current_stream(args[3], text):
            what = f"C++ launches on stream `{args[3]}`, not 0 or the current stream"
            out.append(Finding("side_stream", line(m.start()), what))
    return out
