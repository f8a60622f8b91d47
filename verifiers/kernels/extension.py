"""The host+device path without a GPU: the extension's CUDA sources compiled for sm_90
with nvcc against the torch headers (compile only; nothing is linked or loaded).

The candidate's `load_inline(cuda_sources=...)` strings are read from the AST: string
literals, or module-level names bound to them. On a GPU the runner calls load_inline
itself (cached by content in TORCH_EXTENSIONS_DIR).

`launch_violations` reads the `<<<grid, block, smem>>>` launches in those sources: where
the source spells the configuration out (literals, `dim3(...)` of literals, names bound
once to constants) a launch the device would refuse is found before anything runs; an
expression known only at run time is left to the run.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import math
import operator
import re
import sysconfig
import time
from pathlib import Path

from verifiers import pyast
from verifiers.base import Context, GateFail
from verifiers.contract import Status
from verifiers.kernels.errors import nvcc_failure
from verifiers.kernels.limits import DeviceLimits
from verifiers.kernels.nvcc import find_nvcc, nvcc_crashed
from verifiers.sandbox import SANDBOX_PATH, Sandbox, SandboxUnavailable
from verifiers.warm import GUEST_WORK

# what load_inline puts before the CUDA sources it joins into its cuda.cu (the same three
# lines, unless no_implicit_headers=True): torch.utils.cpp_extension.load_inline
IMPLICIT_HEADERS = ("#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>")
EXTENSION_BUILD_S = 600.0  # the torch headers: about a minute (H200 load_inline, nvcc here)
EXTENSION_MEMORY_MB = 32768


@dataclasses.dataclass(frozen=True)
class ExtensionCall:
    """One `load_inline(...)` call: the CUDA sources it is given (string literals, or
    module-level names bound to them) and whether it asks for no implicit headers."""

    cuda_sources: tuple[str, ...]
    implicit_headers: bool = True

    def unit(self) -> str:
        """The CUDA file load_inline compiles: its sources joined by newlines, after the
        implicit headers (load_inline's own assembly, which writes it as cuda.cu)."""
        head = IMPLICIT_HEADERS if self.implicit_headers else ()
        return "\n".join([*head, *self.cuda_sources])


def extension_calls(code: str) -> list[ExtensionCall]:
    """The candidate's `load_inline` calls that are given CUDA sources, in source order;
    `cuda_sources` by keyword or as the third positional argument, as load_inline takes it."""
    tree = pyast.parse(code)
    names: dict[str, str] = {}
    for node in tree.body:
        literal = isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        if literal and isinstance(node.value.value, str):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names[t.id] = node.value.value

    def strings(value: ast.expr) -> list[str]:
        items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
        out = []
        for it in items:
            if isinstance(it, ast.Constant) and isinstance(it.value, str):
                out.append(it.value)
            elif isinstance(it, ast.Name) and it.id in names:
                out.append(names[it.id])
        return out

    calls = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
            == "load_inline"
        ):
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            given = kw.get("cuda_sources", node.args[2] if len(node.args) > 2 else None)
            cuda = strings(given) if given is not None else []
            bare = kw.get("no_implicit_headers")
            plain = isinstance(bare, ast.Constant) and bare.value is True
            if cuda:
                where = (node.lineno, node.col_offset)
                calls.append((where, ExtensionCall(tuple(cuda), implicit_headers=not plain)))
    return [call for _, call in sorted(calls, key=lambda c: c[0])]


def extension_sources(code: str) -> list[str]:
    """The `cuda_sources` the candidate hands to load_inline."""
    return [src for call in extension_calls(code) for src in call.cuda_sources]


def torch_includes() -> list[str]:
    import torch

    root = Path(torch.__file__).parent / "include"
    return [
        str(root),
        str(root / "torch" / "csrc" / "api" / "include"),
        sysconfig.get_paths()["include"],
    ]


def compile_only(ctx: Context) -> str:
    calls = extension_calls(ctx.code)
    if not calls:
        raise GateFail(
            Status.FORMAT_ERROR,
            "missing_entry_point",
            "load_inline without literal cuda_sources",
            feedback="pass cuda_sources= as a string literal (or a module-level name bound to "
            "one) so the kernel can be compiled before anything runs",
        )
    nvcc = find_nvcc()
    t0 = time.perf_counter()
    includes = torch_includes()
    work = ctx.workdir
    # cicc over the torch headers maps far more than a candidate's budget: nvcc's own
    # address space, not the candidate's (no candidate code runs here)
    builder = Sandbox(dataclasses.replace(ctx.limits, memory_mb=EXTENSION_MEMORY_MB))
    for call in calls:  # each call is an extension of its own, with one CUDA file
        text = call.unit()
        name = f"cuda_{hashlib.sha256(text.encode()).hexdigest()[:8]}.cu"
        (work / name).write_text(text, encoding="utf-8")
        argv = [nvcc, "-c", "-arch=sm_90", "-std=c++17", "-O2", "-Xptxas", "-v"]
        argv += ["-DTORCH_EXTENSION_NAME=crucible_ext", "-DTORCH_API_INCLUDE_EXTENSION_H"]
        argv += ["--expt-relaxed-constexpr"]
        for inc in includes:
            argv += ["-I", inc]
        argv += ["-o", name + ".o", name]
        env = {"PATH": f"{Path(nvcc).parent}:{SANDBOX_PATH}"}
        # the torch and Python headers may live where only root can reach (a pyenv under
        # /root): the sandbox binds them by path
        budget = max(ctx.limits.timeout_s, EXTENSION_BUILD_S)
        res = builder.run(
            argv,
            work,
            timeout_s=budget,
            cpu_s=int(budget) + 1,
            ro_dirs=includes,
            env=env,
            guest_work=GUEST_WORK,  # the headers may sit under /work (a venv in the repo)
        )
        if fault := res.sandbox_fault:
            raise SandboxUnavailable(f"nvcc could not run in the sandbox: {fault}")
        ctx.tool_seconds += res.seconds
        if machine := res.machine_fault("nvcc"):  # slow machine, outside kill: infra
            raise machine
        if res.timed_out:
            raise GateFail(
                Status.TIMEOUT, "tool_timeout", "nvcc did not finish compiling the extension"
            )
        if res.output_capped:  # its messages about the candidate's sources: a flood
            raise GateFail(
                Status.RESOURCE_LIMIT,
                "output_limit",
                f"nvcc printed more than {ctx.limits.output_bytes} bytes about the "
                "extension's sources; stopped",
                feedback=(res.stderr + res.stdout)[-2000:],
            )
        if nvcc_crashed(res.returncode, res.stderr + res.stdout):  # the tool's failure
            raise GateFail(Status.INFRA_ERROR, "tool_crash", f"nvcc crashed: {res.stderr[-300:]}")
        if res.returncode != 0:
            raise nvcc_failure(res.stderr + res.stdout)
    seconds = time.perf_counter() - t0
    return f"extension CUDA compiled for sm_90 against the torch headers in {seconds:.1f}s"


# --- launches whose configuration the source spells out ---------------------------------

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_CONFIG = re.compile(r"<<<(.*?)>>>", re.S)
_NAME = r"[A-Za-z_]\w*"
# the types a size is declared with; a name declared twice (or as a parameter) is skipped
_SIZE_TYPE = (
    r"\b(?:unsigned|signed|int|long|short|size_t|ssize_t|u?int(?:8|16|32|64)_t|auto|dim3"
    r"|index_t)\b"
)
_DECL = re.compile(
    rf"(?P<const>(?:\b(?:static|const|constexpr|__constant__|__device__|__host__)\s+)*)"
    rf"(?:{_SIZE_TYPE}\s+)*{_SIZE_TYPE}\s+(?P<name>{_NAME})\s*(?P<init>[=({{][^;]*);"
)
_DEFINE = re.compile(rf"^[ \t]*#[ \t]*define[ \t]+(?P<name>{_NAME})[ \t]+(?P<init>[^\n]+)$", re.M)
_SIZEOF = {
    "char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1, "short": 2, "half": 2, "__half": 2,
    "__nv_bfloat16": 2, "at::Half": 2, "at::BFloat16": 2, "c10::Half": 2, "int": 4,
    "unsigned": 4, "unsigned int": 4, "float": 4, "int32_t": 4, "uint32_t": 4, "double": 8,
    "long": 8, "long long": 8, "int64_t": 8, "uint64_t": 8, "size_t": 8, "float2": 8,
    "float4": 16, "double2": 16, "half2": 4, "__half2": 4,
}  # fmt: skip
_NEST = {"(": 1, "{": 1, "[": 1, ")": -1, "}": -1, "]": -1}
_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Mod: operator.mod,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
}


class _Source:
    """One CUDA source: the names it binds once to a size it spells out."""

    def __init__(self, text: str):
        self.text = _COMMENT.sub(" ", text)
        self.scalars: dict[str, str] = {}
        self.dims: dict[str, list[str]] = {}
        bindings = [(m, "define") for m in _DEFINE.finditer(self.text)]
        bindings += [(m, "decl") for m in _DECL.finditer(self.text)]
        for m, kind in bindings:
            name, init = m["name"], m["init"].strip()
            if not self._bound_once(name, m.span()):
                continue
            if kind == "define":
                self.scalars[name] = init
                continue
            is_dim3 = re.search(r"\bdim3\s+" + re.escape(name) + r"\b", m.group(0))
            if init.startswith("="):
                init = init[1:].strip()
                if is_dim3:
                    init = re.sub(r"^dim3\b\s*", "", init)
            if is_dim3 and init[:1] in "({" and _closes(init):
                self.dims[name] = _split(init[1:-1])
            elif not m["init"].startswith("=") or init[:1] == "{":
                continue  # `int x(5)`, `int x{5}`: rare for sizes; not read
            elif is_dim3:
                self.dims[name] = [init]
            else:
                self.scalars[name] = init

    def _bound_once(self, name: str, span: tuple[int, int]) -> bool:
        n = re.escape(name)
        decls = len(re.findall(rf"{_SIZE_TYPE}[\s*&]+{n}\b", self.text))
        defines = len(re.findall(rf"#[ \t]*(?:define|undef)[ \t]+{n}\b", self.text))
        if decls + defines != 1:
            return False
        rest = self.text[: span[0]] + " " * (span[1] - span[0]) + self.text[span[1] :]
        changed = (
            rf"(?<![\w.]){n}(?:\s*\.\s*[xyz])?\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"  # n = / n.x +=
            rf"|(?:\+\+|--)\s*{n}\b|(?<![\w.]){n}\s*(?:\+\+|--)"
            rf"|[(,=&|]\s*&\s*{n}\b"  # its address taken: it may be written through
        )
        return re.search(changed, rest) is None

    def value(self, expr: str, depth: int = 0) -> int | None:
        """The integer a constant expression spells, or None."""
        if depth > 8:
            return None
        text = re.sub(
            r"\bsizeof\s*\(\s*([\w: ]+?)\s*\)",
            lambda m: str(_SIZEOF[m[1]]) if m[1] in _SIZEOF else "@",
            expr,
        )
        text = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b", r"\1", text)
        for name in set(re.findall(r"\b[A-Za-z_]\w*\b", text)):
            v = self.value(self.scalars[name], depth + 1) if name in self.scalars else None
            if v is not None:
                text = re.sub(rf"\b{name}\b", f"({v})", text)
            else:
                return None
        try:
            return _eval(pyast.parse(text.strip(), mode="eval").body)
        except (SyntaxError, ValueError, ZeroDivisionError):
            return None

    def dims3(self, arg: str) -> tuple[int | None, int | None, int | None]:
        """A launch's grid or block argument as (x, y, z); None where not spelled out."""
        arg = arg.strip()
        m = re.fullmatch(r"dim3\s*([({].*)", arg, re.S)
        if m and _closes(m[1]):
            parts = _split(m[1][1:-1])
        elif arg in self.dims:
            parts = self.dims[arg]
        elif (v := self.value(arg)) is not None:
            parts = [str(v)]
        else:
            return (None, None, None)  # a dim3 or a size known only at run time
        if not 1 <= len(parts) <= 3:
            return (None, None, None)
        vals = [self.value(p) for p in parts] + [1] * (3 - len(parts))
        return (vals[0], vals[1], vals[2])


def _eval(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Div):  # C's integer division truncates toward zero
            q = abs(a) // abs(b)
            return q if (a < 0) == (b < 0) else -q
        if type(node.op) in _OPS:
            return _OPS[type(node.op)](a, b)
    raise ValueError("not a constant expression")


def _closes(text: str) -> bool:
    """`(...)` / `{...}` whose first bracket closes at the end."""
    depth = 0
    for i, ch in enumerate(text):
        depth += _NEST.get(ch, 0)
        if depth == 0:
            return i == len(text) - 1
    return False


def _split(args: str) -> list[str]:
    """Split at the commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in args:
        depth += _NEST.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()] if cur.strip() or out else []


def _kernel_name(before: str) -> str:
    """The kernel named just before `<<<`: `foo`, `foo<float>`, `ns::foo<T, 4>`."""
    i = len(before.rstrip())
    if before[:i].endswith(">"):
        depth = 0
        for j in range(i - 1, -1, -1):
            depth += (before[j] == ">") - (before[j] == "<")
            if depth == 0:
                i = j
                break
    m = re.search(r"[\w:]+\s*$", before[:i])
    return m.group(0).strip() if m else "kernel"


def launch_violations(code: str, limits: DeviceLimits | None = None) -> list[str]:
    """The `<<<...>>>` launches in the extension's CUDA sources that the device would
    refuse, as far as their configuration is spelled out in the source; each message
    names the limit."""
    lim = limits or DeviceLimits()
    try:
        sources = extension_sources(code)
    except SyntaxError:
        return []
    out: list[str] = []
    for text in sources:
        src = _Source(text)
        optin = re.search(r"MaxDynamicSharedMemorySize|MAX_DYNAMIC_SHARED_SIZE", src.text)
        for m in _CONFIG.finditer(src.text):
            args = _split(m[1])
            if len(args) < 2:
                continue
            where = f"kernel {_kernel_name(src.text[: m.start()])}<<<{' '.join(m[1].split())}>>>"
            for problem in _refusals(src, args, bool(optin), lim):
                out.append(f"{where}: {problem}")
    return out


def _refusals(src: _Source, args: list[str], optin: bool, lim: DeviceLimits) -> list[str]:
    grid, block = src.dims3(args[0]), src.dims3(args[1])
    found = []
    threads = math.prod(block) if None not in block else None  # type: ignore[arg-type]
    if threads is not None and threads > lim.max_threads_per_block:
        found.append(
            f"{threads} threads per block; the device allows {lim.max_threads_per_block} "
            f"({lim.name})"
        )
    else:
        for axis, b, most in zip("xyz", block, lim.max_block, strict=True):
            if b is not None and b > most:
                found.append(f"blockDim.{axis} = {b}; the device allows {most} ({lim.name})")
    for axis, g, most in zip("xyz", grid, lim.max_grid, strict=True):
        if g is not None and g > most:
            found.append(f"gridDim.{axis} = {g}; the device allows {most} ({lim.name})")
    smem = src.value(args[2]) if len(args) > 2 else None
    most = lim.shared_per_block_optin if optin else lim.shared_per_block
    if smem is not None and smem > most:
        how = (
            ""
            if optin
            else (
                " without cudaFuncSetAttribute(kernel, "
                "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)"
                f" ({lim.shared_per_block_optin} B with it)"
            )
        )
        found.append(
            f"{smem} B dynamic shared memory per block; the device allows {most} B{how} "
            f"({lim.name})"
        )
    return found
