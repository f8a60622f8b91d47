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
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

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
    "Stream",
    "synchronize",
    "set_stream",
    "stream",
    "current_stream",
    "default_stream",
    "ExternalStream",
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
        tree = ast.parse(problem_source)
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
        tree = ast.parse(code)
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
    return out


class _Checker(ast.NodeVisitor):
    def __init__(self, ref_ops: set[str], bindings: dict[str, set[str]] | None = None):
        self.ref_ops = ref_ops
        self.bindings = bindings or {}
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
        timing = dotted.startswith(("torch.", "triton.")) and node.attr in TIMING_NAMES
        if timing and isinstance(node.ctx, ast.Load):
            self.add("timing_games", node, f"uses {dotted}")
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
            elif rest.startswith("cuda.") and last in TIMING_NAMES:
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


def check(code: str, problem_source: str = "") -> list[Finding]:
    """Every rule the candidate trips (empty: clean). SyntaxError propagates."""
    tree = ast.parse(code)
    checker = _Checker(reference_ops(problem_source), _bindings(tree))
    checker.visit(tree)
    for text, node in _cpp_sources(tree):
        for m in _CPP_TORCH_CALL.finditer(text):
            name = m.group(2) or m.group(1)
            if m.group(1) in _CPP_ALLOWED or name in _CPP_ALLOWED:
                continue
            line = node.lineno + text[: m.start()].count("\n")
            checker.add("torch_fallback", node, f"C++ calls {m.group(0).rstrip('(')} (line {line})")
    seen, out = set(), []
    for f in checker.findings:
        key = (f.code, f.line, f.what)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _cpp_sources(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """String literals that are C++/CUDA source (they include a header or a __global__)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            v = node.value
            if "#include" in v or "__global__" in v or "torch::" in v:
                out.append((v, node))
    return out
