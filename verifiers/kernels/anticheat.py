"""Static anti-cheat for kernel candidates: rules over the Python AST (and the C++ of an
extension), each with its rationale. Stdlib only; nothing of the candidate runs.

Code inside `@triton.jit` functions and inside CUDA source strings is kernel code and is
exempt from the torch rules. Everywhere else (forward and its helpers) the candidate may
allocate, read shapes and strides, make views and launch kernels, nothing more.
"""

from __future__ import annotations

import ast
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

    def message(self) -> str:
        return f"line {self.line}: {self.what} [{self.code}: {RULES[self.code]}]"


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


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = _dotted(target) or ""
        if name.split(".")[-1] in ("jit", "autotune", "heuristics", "njit"):
            return True
    return False


class _Checker(ast.NodeVisitor):
    def __init__(self, ref_ops: set[str]):
        self.ref_ops = ref_ops
        self.findings: list[Finding] = []
        self.aliases: dict[str, str] = {}  # local name -> dotted module/object path
        self.submodules: set[str] = set()  # self.<attr> assigned an nn layer in __init__
        self.tensors: set[str] = set()  # names holding tensors in the current function
        self.fn_stack: list[str] = []

    def add(self, code: str, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(code, getattr(node, "lineno", 0), what))

    def resolve(self, node: ast.expr) -> str | None:
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head)
        if base is None:
            return dotted
        return f"{base}.{rest}" if rest else base

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
        if _is_kernel(node):
            return  # kernel code: tl.* / device code, not torch
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
        elif node.id in INTROSPECTION:
            self.add("reads_reference", node, f"uses {node.id}")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in DUNDER_ATTRS:
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
        if self._tensorish(node.target) or self._tensorish(node.value):
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
        if self.in_function and not self.in_init:
            if isinstance(node.op, ast.MatMult):
                self.add("torch_compute", node, "the @ operator (a torch matmul)")
            elif self._tensorish(node.left) or self._tensorish(node.right):
                self.add("torch_compute", node, "arithmetic on a tensor outside the kernels")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if self.in_function and not self.in_init and self._tensorish(node.operand):
            self.add("torch_compute", node, "arithmetic on a tensor outside the kernels")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if (
            self.in_function
            and not self.in_init
            and (self._tensorish(node.left) or any(self._tensorish(c) for c in node.comparators))
        ):
            self.add("torch_compute", node, "compares tensors outside the kernels")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        callee = self.resolve(node.func)
        if callee == "getattr" and not (
            len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
        ):
            self.add("reads_reference", node, "getattr with a computed name")
        if not self.in_init and self.in_function:
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


def check(code: str, problem_source: str = "") -> list[Finding]:
    """Every rule the candidate trips (empty: clean). SyntaxError propagates."""
    tree = ast.parse(code)
    checker = _Checker(reference_ops(problem_source))
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
