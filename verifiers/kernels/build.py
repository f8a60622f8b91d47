"""`load_inline` extensions built by the host, off the GPU, once per content.

A candidate on the host+device path calls `torch.utils.cpp_extension.load_inline(...)` at
import. Left to the runner, that build (40-65 s, nearly all of it the torch headers) runs
inside the GPU job, holding the job's GPU-memory admission and a runner, with the card
idle. Here the host builds it first, where builds belong:

- `inline_specs` reads every `load_inline` call's arguments from the candidate's AST
  (literals, or module-level names bound to them). A call it cannot read (a source built
  at run time, a keyword it does not know) leaves the build to the runner, as before.
- `build_inline` writes exactly the files and `build.ninja` load_inline would (torch's own
  code does it, in a subprocess that runs no candidate code), then runs each compile and
  the link from that ninja file in the sandbox (the candidate's source is compiled there,
  never run). Objects are cached by unit (its text, its command, the toolchain) and the
  linked library by the whole call, in the host's sealed cache (`hostcache`): nothing of
  it is bound writable into any sandbox, so no candidate can plant an artifact.
- The C++ unit (`main.cpp`: `#include <torch/extension.h>`, the cpp_sources, the pybind
  bindings) is compiled against a precompiled `torch/extension.h`, built once per
  toolchain and flags (gcc's PCH: 18.5 s -> 5.8 s for that unit, measured here). nvcc has
  no precompiled headers (cudafe++ and cicc parse the torch headers in every CUDA unit):
  a new CUDA unit still costs its minute, once, on a build node; the same unit again is a
  cache hit.
- A node without the CUDA build of torch (a CPU node, CI) compiles every unit (so a
  broken cpp_sources fails there too) and caches the objects; the node that can link
  (a GPU node, a build node with CUDA torch) links them, ~1 s.

On the GPU node the runner's `load_inline` is wrapped (`prebuilt_loader`): a call whose
arguments, read at run time, give the key of a library the host built imports that
library; any other call builds as load_inline always did. The key is the call's arguments
and the toolchain, so a candidate whose run-time arguments differ from what its source
spells gets no prebuilt library, only its own build.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from verifiers import pyast
from verifiers.hostcache import SealedCache

RECIPE = "crucible-inline-1"  # bump when what a key stands for changes
SO_MAX_BYTES = 256 * 2**20
ENTRY_MAX_BYTES = 2 * SO_MAX_BYTES
ARCH_LIST = "9.0"  # sm_90: what every node builds for (never asks a GPU)
# load_inline's parameters that shape the library; the rest change how it is built or
# logged, not what it is (verbose, keep_intermediates, use_pch)
SHAPING = (
    "name",
    "cpp_sources",
    "cuda_sources",
    "functions",
    "extra_cflags",
    "extra_cuda_cflags",
    "extra_ldflags",
    "with_cuda",
    "with_pytorch_error_handling",
    "no_implicit_headers",
)
IGNORED = ("verbose", "keep_intermediates", "use_pch")
# given a value other than these, the host does not prebuild (the runner builds)
DEFAULTS_ONLY = {
    "sycl_sources": None,
    "extra_sycl_cflags": None,
    "extra_include_paths": None,
    "build_directory": None,
    "with_sycl": None,
    "is_python_module": True,
}
PARAMS = (
    "name",
    "cpp_sources",
    "cuda_sources",
    "sycl_sources",
    "functions",
    "extra_cflags",
    "extra_cuda_cflags",
    "extra_sycl_cflags",
    "extra_ldflags",
    "extra_include_paths",
    "build_directory",
    "verbose",
    "with_cuda",
    "with_sycl",
    "is_python_module",
    "with_pytorch_error_handling",
    "keep_intermediates",
    "use_pch",
    "no_implicit_headers",
)  # load_inline's order (torch 2.11-2.13)
BUILD_MEMORY_MB = 32768
PCH_FSIZE_MB = 4096
GUEST_BUILD = "/kbuild"  # where the sandbox sees a call's build dir
GUEST_PCH = "/kpch"  # and a precompiled header being made
_NAME_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]{0,63}\Z")


# --- what a call asks for ------------------------------------------------------------------
def _strings(value: Any) -> list[str] | None:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def normalize(args: dict[str, Any]) -> dict | None:
    """The spec of one load_inline call from its bound arguments (every name in PARAMS
    that was given), or None when the host should not prebuild it."""
    for k, default in DEFAULTS_ONLY.items():
        v = args.get(k, default)
        if v != default and not (k in ("sycl_sources", "extra_include_paths") and not v):
            return None
    if set(args) - set(PARAMS):
        return None
    name = args.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        return None
    spec: dict[str, Any] = {"name": name}
    for k in ("cpp_sources", "cuda_sources", "extra_cflags", "extra_cuda_cflags", "extra_ldflags"):
        v = _strings(args.get(k))
        if v is None:
            return None
        spec[k] = v
    fns = args.get("functions")
    if isinstance(fns, str):
        fns = [fns]
    if isinstance(fns, (list, tuple)) and all(isinstance(f, str) for f in fns):
        fns = {f: f for f in fns}
    if fns is not None and not (
        isinstance(fns, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in fns.items())
    ):
        return None
    spec["functions"] = fns
    for k, default in (
        ("with_cuda", None),
        ("with_pytorch_error_handling", True),
        ("no_implicit_headers", False),
    ):
        v = args.get(k, default)
        if v is not None and not isinstance(v, bool):
            return None
        spec[k] = v
    return spec


def spec_key(spec: dict, toolchain: str) -> str:
    return hashlib.sha256(
        json.dumps([RECIPE, toolchain, spec], sort_keys=True).encode("utf-8", "surrogatepass")
    ).hexdigest()


def _module_literals(tree: ast.Module) -> dict[str, Any]:
    names: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                try:
                    names[target.id] = ast.literal_eval(node.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    names.pop(target.id, None)
    # a name bound twice at module level is not a constant
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
    return {k: v for k, v in names.items() if counts.get(k) == 1}


def _value(node: ast.expr, names: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        raise ValueError(node.id)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e, names) for e in node.elts]
    return ast.literal_eval(node)


def inline_specs(code: str) -> list[dict] | None:
    """Every `load_inline` call's spec, in source order; None when any call cannot be read
    from the source alone (then the runner builds, as load_inline always did)."""
    try:
        tree = pyast.parse(code)
    except SyntaxError:
        return None
    names = _module_literals(tree)
    found = []
    for node in ast.walk(tree):
        fn = node.func if isinstance(node, ast.Call) else None
        if fn is None or (getattr(fn, "attr", None) or getattr(fn, "id", None)) != "load_inline":
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            return None
        try:
            args = {PARAMS[i]: _value(a, names) for i, a in enumerate(node.args)}
            for k in node.keywords:
                args[str(k.arg)] = _value(k.value, names)
        except (ValueError, TypeError, SyntaxError, IndexError, MemoryError, RecursionError):
            return None
        spec = normalize(args)
        if spec is None:
            return None
        found.append(((node.lineno, node.col_offset), spec))
    return [s for _, s in sorted(found, key=lambda f: f[0])]


# --- the toolchain -------------------------------------------------------------------------
@functools.cache
def _version(argv: tuple[str, ...]) -> str:
    try:
        out = subprocess.run(list(argv), capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "missing"
    return out.strip().splitlines()[0] if out.strip() else "unknown"


def cxx() -> str:
    return os.environ.get("CXX") or "c++"


@functools.cache
def toolchain() -> str:
    """What a built library depends on besides the call: torch (its headers and ABI),
    CUDA's nvcc, the C++ compiler, Python, the target arch."""
    import torch

    from verifiers.kernels.nvcc import find_nvcc, nvcc_version

    nvcc = find_nvcc()
    return json.dumps(
        {
            "torch": torch.__version__,
            "torch_cuda": str(torch.version.cuda),
            "nvcc": nvcc_version(nvcc) if nvcc else "missing",
            "cxx": _version((cxx(), "--version")),
            "python": sys.version.split()[0],
            "arch": ARCH_LIST,
        },
        sort_keys=True,
    )


def torch_can_link() -> bool:
    """Whether this torch links CUDA extensions (the CUDA build: libtorch_cuda is there)."""
    import torch

    return (Path(torch.__file__).parent / "lib" / "libtorch_cuda.so").exists()


# --- the cache -----------------------------------------------------------------------------
class BuildCache(SealedCache):
    """Objects by unit key and libraries by call key under `root/inline`, host-only."""

    def __init__(self, root: Path):
        super().__init__(Path(root) / "inline", ENTRY_MAX_BYTES)

    def get(self, key: str) -> dict | None:
        body = self.read(key)
        if body is None:
            return None
        entry = self._decoded(body)
        if entry is None:
            with contextlib.suppress(OSError):
                self.path(key).unlink()
        return entry

    def decode(self, body: dict) -> dict | None:
        blob = base64.b64decode(body["blob"]) if body["blob"] is not None else None
        good = (
            isinstance(body["ok"], bool)
            and isinstance(body["log"], str)
            and (blob is None or hashlib.sha256(blob).hexdigest() == body["sha256"])
        )
        return {"ok": body["ok"], "log": body["log"], "blob": blob} if good else None

    def put(self, key: str, ok: bool, log: str, blob: bytes | None) -> None:
        self.write(
            key,
            {
                "ok": ok,
                "log": log[-20000:],
                "blob": base64.b64encode(blob).decode() if blob is not None else None,
                "sha256": hashlib.sha256(blob).hexdigest() if blob is not None else None,
            },
        )


# --- build.ninja, as torch writes it ---------------------------------------------------------
def parse_ninja(
    text: str,
) -> tuple[dict[str, str], dict[str, str], list[tuple[str, str, list[str]]]]:
    """(top-level variables, rule commands, build statements (output, rule, inputs)) of
    the ninja file torch writes: no includes, no per-build variables besides none."""
    variables: dict[str, str] = {}
    rules: dict[str, str] = {}
    builds: list[tuple[str, str, list[str]]] = []
    lines = text.replace("$\n", "").splitlines()
    rule = None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith((" ", "\t")):
            k, _, v = line.strip().partition("=")
            if rule is not None and k.strip() == "command":
                rules[rule] = v.strip()
            continue
        rule = None
        if line.startswith("rule "):
            rule = line.split()[1]
        elif line.startswith("build "):
            outs, _, rest = line[len("build ") :].partition(":")
            parts = _ninja_split(rest)
            builds.append((_unescape(outs.strip()), parts[0], [_unescape(p) for p in parts[1:]]))
        elif "=" in line:
            k, _, v = line.partition("=")
            variables[k.strip()] = v.strip()
    return variables, rules, builds


def _ninja_split(text: str) -> list[str]:
    return [p for p in re.split(r"(?<!\$) ", text.strip()) if p and p != "|"]


def _unescape(path: str) -> str:
    return path.replace("$ ", " ").replace("$:", ":").replace("$$", "$")


def expand(command: str, variables: dict[str, str], ins: list[str], out: str) -> str:
    """A rule's command with `$in`, `$out` and the variables substituted (shell-quoted
    paths, as ninja leaves the text to /bin/sh)."""
    local = {**variables, "in": " ".join(shlex.quote(i) for i in ins), "out": shlex.quote(out)}

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        return expand(local[name], {}, ins, out) if name in variables else local.get(name, "")

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", sub, command).replace("$$", "$")


# --- the build -------------------------------------------------------------------------------
@dataclasses.dataclass
class BuildResult:
    ok: bool
    log: str
    library: bytes | None  # the linked .so (None: failed, or this node cannot link)
    seconds: float
    cached: bool
    units: dict[str, bool]  # unit file -> came from the cache
    failed_unit: str = ""
    timed_out: bool = False
    output_capped: bool = False
    crashed: bool = False
    pch: str = ""  # "used", "built", "" (none for this call)


class BuildError(RuntimeError):
    """The host could not set the build up (torch's writer failed): not the candidate's."""


def write_build_files(spec: dict, build_dir: Path, env: dict[str, str]) -> None:
    """main.cpp, cuda.cu and build.ninja as load_inline writes them, by torch's own code
    in a subprocess (this process's environment and torch state stay as they are)."""
    build_dir.mkdir(parents=True, exist_ok=True)
    (build_dir.parent / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "verifiers.kernels.build",
            "write",
            str(build_dir.parent / "spec.json"),
            str(build_dir),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        # the host's CC never reaches build.ninja (torch writes it as nvcc's -ccbin): only
        # the builder's, a compiler the sandbox can run
        env={**{k: v for k, v in os.environ.items() if k != "CC"}, **env},
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    if res.returncode != 0 or not (build_dir / "build.ninja").exists():
        raise BuildError(f"torch's extension writer failed: {(res.stderr or res.stdout)[-600:]}")


def _writer_main(spec_path: str, build_dir: str) -> int:
    """`python -m verifiers.kernels.build write SPEC DIR`: torch's load_inline, stopped
    where it would build (its `_jit_compile` writes the ninja file instead)."""
    import inspect

    import torch.utils.cpp_extension as ce

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    writer = ce._write_ninja_file_to_build_library
    accepted = set(inspect.signature(writer).parameters)

    def jit(
        name,
        sources,
        extra_cflags,
        extra_cuda_cflags,
        extra_sycl_cflags,
        extra_ldflags,
        extra_include_paths,
        build_directory,
        verbose,
        with_cuda,
        with_sycl,
        is_python_module,
        is_standalone,
        keep_intermediates=True,
    ):
        if with_cuda is None:
            with_cuda = any(map(ce._is_cuda_file, sources))
        # what _write_ninja_file_and_build_library does before it writes (torch's libs)
        prep = {
            "extra_ldflags": extra_ldflags or [],
            "with_cuda": with_cuda,
            "with_sycl": with_sycl,
            "verbose": False,
            "is_standalone": is_standalone,
        }
        wanted = inspect.signature(ce._prepare_ldflags).parameters
        extra_ldflags = ce._prepare_ldflags(**{k: v for k, v in prep.items() if k in wanted})
        kw = {
            "path": os.path.join(build_directory, "build.ninja"),
            "name": name,
            "sources": sources,
            "extra_cflags": extra_cflags or [],
            "extra_cuda_cflags": extra_cuda_cflags or [],
            "extra_sycl_cflags": extra_sycl_cflags or [],
            "extra_ldflags": extra_ldflags or [],
            "extra_include_paths": extra_include_paths or [],
            "with_cuda": with_cuda,
            "with_sycl": with_sycl,
            "is_standalone": is_standalone,
        }
        writer(**{k: v for k, v in kw.items() if k in accepted})

    ce._jit_compile = jit
    if ce.CUDA_HOME is None and os.environ.get("CUDA_HOME"):
        # torch built without CUDA (a CPU node) leaves CUDA_HOME unset whatever the
        # environment says; the units still compile against this node's nvcc
        ce.CUDA_HOME = os.environ["CUDA_HOME"]
    ce.load_inline(**spec, build_directory=build_dir)
    return 0


class Builder:
    """Runs one call's compiles and link confined, under `limits` but for memory and
    file size: cicc over the torch headers maps gigabytes (the compiler's, no candidate
    code runs), and the precompiled header is ~750 MB."""

    def __init__(self, limits, cache_dir: Path, *, pch: bool = True, timeout_s: float = 600.0):
        from verifiers.sandbox import Sandbox

        big = dataclasses.replace(limits, memory_mb=max(limits.memory_mb, BUILD_MEMORY_MB))
        self.sandbox = Sandbox(dataclasses.replace(big, fsize_mb=max(limits.fsize_mb, 512)))
        self.pch_sandbox = Sandbox(dataclasses.replace(big, fsize_mb=PCH_FSIZE_MB))
        self.cache = BuildCache(cache_dir)
        self.pch_root = Path(cache_dir) / "pch"
        self.use_pch = pch
        self.timeout_s = timeout_s
        # every cache entry its builds read or wrote, in order (objects, libraries): what a
        # build node hands on to the node that verifies (`CudaVerifier.prebuild`)
        self.keys: list[str] = []

    def _cached(self, key: str) -> dict | None:
        hit = self.cache.get(key)
        if hit is not None:
            self.keys.append(key)
        return hit

    def _store(self, key: str, ok: bool, log: str, blob: bytes | None) -> None:
        self.cache.put(key, ok, log, blob)
        self.keys.append(key)

    def _ro(self) -> list[str]:
        import sysconfig

        import torch

        from verifiers.kernels.nvcc import find_nvcc

        dirs = [
            str(Path(torch.__file__).parent / "include"),
            str(Path(torch.__file__).parent / "lib"),
            sysconfig.get_paths()["include"],
        ]
        nvcc = find_nvcc()
        if nvcc:
            dirs.append(str(Path(nvcc).parent.parent))
        return list(dict.fromkeys(dirs))

    def _env(self) -> dict[str, str]:
        from verifiers.kernels.nvcc import find_nvcc
        from verifiers.kernels.pool import build_tool
        from verifiers.sandbox import SANDBOX_PATH

        nvcc = find_nvcc()
        env = {"TORCH_CUDA_ARCH_LIST": ARCH_LIST, "MAX_JOBS": "1"}
        # the C++ compiler the sandbox uid can run: a GPU image's own CXX (/opt/gcc on the
        # H200) is outside the sandbox, and torch writes CXX into build.ninja; it also
        # writes CC as nvcc's `-ccbin` (seen on the H100: every CUDA unit failed "Failed to
        # preprocess host compiler properties"), so CC is ours too, or unset (no -ccbin:
        # nvcc's own default host compiler; `write_build_files` drops the host's CC)
        for var, names in (("CXX", ("c++", "g++")), ("CC", ("gcc", "cc"))):
            tool = build_tool(names)
            if tool:
                env[var] = tool
        if nvcc:
            env["CUDA_HOME"] = str(Path(nvcc).parent.parent)
            env["PATH"] = f"{Path(nvcc).parent}:{SANDBOX_PATH}"
        return env

    def _run(
        self, command: str, work: Path, ro: list[str], budget: float, guest: str, sandbox=None
    ):
        env = self._env()
        env.setdefault("PATH", "/usr/bin:/bin")
        return (sandbox or self.sandbox).run(
            ["/bin/sh", "-c", command],
            work,
            timeout_s=budget,
            cpu_s=int(budget) + 1,
            ro_dirs=ro,
            env=env,
            guest_work=guest,
        )

    def build(self, spec: dict, *, link: bool) -> BuildResult:
        from verifiers.warm import OutputRefused, read_beneath

        tc = toolchain()
        key = spec_key(spec, tc)
        t0 = time.perf_counter()
        if link:
            hit = self._cached(key)
            if hit is not None:
                return BuildResult(
                    hit["ok"],
                    hit["log"],
                    hit["blob"],
                    0.0,
                    True,
                    {},
                    failed_unit="" if hit["ok"] else "cached",
                )
        with tempfile.TemporaryDirectory(prefix="crucible-inline-") as tmp:
            work = self.sandbox.prepare_workdir(Path(tmp) / "w")
            build_dir = work / "build"
            write_build_files(spec, build_dir, self._env())
            if self.sandbox._drop_uid:  # the sandbox uid writes objects beside the sources
                for p in (build_dir, *build_dir.iterdir()):
                    os.chown(p, self.sandbox.uid, self.sandbox.uid)
            # the sandbox sees the build dir at GUEST_BUILD: torch wrote the host's path
            text = (build_dir / "build.ninja").read_text().replace(str(build_dir), GUEST_BUILD)
            variables, rules, builds = parse_ninja(text)
            ro = self._ro()
            units: dict[str, bool] = {}
            logs: list[str] = []
            pch_state = ""
            objects: list[str] = []
            target = None
            for out, rule, ins in builds:
                if rule == "link":
                    target = (out, ins)
                    continue
                if rule not in ("compile", "cuda_compile"):
                    continue
                command = expand(rules[rule], variables, ins, out)
                src = build_dir / Path(ins[0]).name
                text = src.read_text(encoding="utf-8", errors="surrogateescape")
                # keyed by torch's own command: the precompiled header changes how the unit
                # is compiled, not what it compiles to (and its path is this node's)
                ukey = hashlib.sha256(
                    json.dumps([RECIPE, tc, spec["name"], text, command]).encode(
                        "utf-8", "surrogatepass"
                    )
                ).hexdigest()
                hit = self._cached(ukey)
                if hit is not None:
                    units[src.name] = True
                    logs.append(hit["log"])
                    if not hit["ok"]:
                        return BuildResult(
                            False,
                            "\n".join(logs),
                            None,
                            0.0,
                            True,
                            units,
                            failed_unit=src.name,
                            pch=pch_state,
                        )
                    (build_dir / out).write_bytes(hit["blob"])
                    objects.append(out)
                    continue
                if rule == "compile" and self.use_pch and not spec.get("no_implicit_headers"):
                    pch_dir, pch_state = self._pch(variables, work, ro)
                    if pch_dir is not None:
                        command = self._with_pch(command, spec["name"], build_dir, pch_dir, ins[0])
                        ro = [*ro, str(pch_dir)]
                res = self._run(command, build_dir, ro, self.timeout_s, GUEST_BUILD)
                units[src.name] = False
                log = res.stderr + res.stdout
                logs.append(log)
                bad = self._bad(res, log, src.name, units, logs, t0, pch_state)
                if bad is not None:
                    if not bad.crashed and not bad.timed_out and not bad.output_capped:
                        self._store(ukey, False, log, None)
                    return bad
                try:
                    blob = read_beneath(build_dir, build_dir / out, SO_MAX_BYTES)
                except (OSError, OutputRefused) as e:
                    return BuildResult(
                        False,
                        f"{out}: {e}",
                        None,
                        time.perf_counter() - t0,
                        False,
                        units,
                        failed_unit=src.name,
                    )
                self._store(ukey, True, log, blob)
                objects.append(out)
            if not link or target is None:
                return BuildResult(
                    True,
                    "\n".join(logs),
                    None,
                    time.perf_counter() - t0,
                    False,
                    units,
                    pch=pch_state,
                )
            out, ins = target
            command = expand(rules["link"], variables, ins, out)
            res = self._run(command, build_dir, ro, self.timeout_s, GUEST_BUILD)
            log = res.stderr + res.stdout
            logs.append(log)
            bad = self._bad(res, log, out, units, logs, t0, pch_state)
            if bad is not None:
                if not bad.crashed and not bad.timed_out and not bad.output_capped:
                    self._store(key, False, "\n".join(logs), None)
                return bad
            library = read_beneath(build_dir, build_dir / out, SO_MAX_BYTES)
            self._store(key, True, "\n".join(logs), library)
            return BuildResult(
                True,
                "\n".join(logs),
                library,
                time.perf_counter() - t0,
                False,
                units,
                pch=pch_state,
            )

    def _bad(self, res, log, unit, units, logs, t0, pch_state) -> BuildResult | None:
        from verifiers.kernels.nvcc import nvcc_crashed
        from verifiers.sandbox import MachineFault, SandboxUnavailable

        if fault := res.sandbox_fault:
            raise SandboxUnavailable(f"the extension build could not run in the sandbox: {fault}")
        if machine := res.machine_fault("the extension build"):  # the machine's: infra
            raise machine
        common = {"units": units, "failed_unit": unit, "pch": pch_state}
        seconds = time.perf_counter() - t0
        text = "\n".join(logs)
        if res.returncode == 127 and "not found" in log:  # the shell found no compiler
            raise MachineFault(
                "tool_missing", f"the extension build's compiler is missing here: {log[-300:]}"
            )
        if res.timed_out:
            return BuildResult(False, text, None, seconds, False, timed_out=True, **common)
        if res.output_capped:
            return BuildResult(False, text, None, seconds, False, output_capped=True, **common)
        if nvcc_crashed(res.returncode, log):
            return BuildResult(False, text, None, seconds, False, crashed=True, **common)
        if res.returncode != 0:
            return BuildResult(False, text, None, seconds, False, **common)
        return None

    # --- the precompiled torch/extension.h ---------------------------------------------
    def _pch(self, variables: dict[str, str], work: Path, ro: list[str]) -> tuple[Path | None, str]:
        """The dir holding torch/extension.h.gch for these flags (built here the first
        time, from torch's headers alone: no candidate text), or None."""
        import torch

        flags = self._pch_flags(variables)
        header = Path(torch.__file__).parent / "include" / "torch" / "extension.h"
        key = hashlib.sha256(json.dumps([RECIPE, toolchain(), flags]).encode()).hexdigest()[:32]
        final = self.pch_root / key
        if (final / "torch" / "extension.h.gch").exists():
            return final, "used"
        staging = self.sandbox.prepare_workdir(work / "pch" / "torch")
        command = (
            f"{variables.get('cxx', 'c++')} -x c++-header {flags} {shlex.quote(str(header))} "
            f"-o {GUEST_PCH}/extension.h.gch"
        )
        res = self._run(command, staging, ro, self.timeout_s, GUEST_PCH, self.pch_sandbox)
        if res.returncode != 0 or not (staging / "extension.h.gch").exists():
            self.pch_log = (res.stderr + res.stdout)[-2000:]
            return None, "failed"  # the unit compiles without it
        (staging / "extension.h").write_text(
            "#pragma once\n/* torch/extension.h is precompiled beside this file */\n"
        )
        self.pch_root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.pch_root, 0o755)  # read (bound read-only) by the sandbox uid
        tmp = Path(tempfile.mkdtemp(dir=self.pch_root, prefix=".tmp-"))
        os.rename(staging, tmp / "torch")
        for p in (tmp, tmp / "torch", *(tmp / "torch").iterdir()):
            # the host's from now on: the sandbox uid that wrote it may not change it
            os.chown(p, os.getuid(), os.getgid())
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        try:
            os.rename(tmp, final)
        except OSError:  # another build made it first
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
        return final, "built"

    @staticmethod
    def _pch_flags(variables: dict[str, str]) -> str:
        cflags = expand(variables.get("cflags", ""), variables, [], "")
        post = expand(variables.get("post_cflags", ""), variables, [], "")
        flags = re.sub(r"(?:^|\s)-DTORCH_EXTENSION_NAME=\S+", " ", f"{cflags} {post}")
        return " ".join(flags.split())

    def _with_pch(
        self, command: str, name: str, build_dir: Path, pch_dir: Path, source: str
    ) -> str:
        """The C++ unit's command on a wrapper that includes the precompiled header first,
        then defines the extension's name and includes the unit (torch's headers never
        read TORCH_EXTENSION_NAME: the unit compiles to the same code)."""
        wrapper = build_dir / "main_pch.cpp"
        wrapper.write_text(
            f"#include <torch/extension.h>\n#define TORCH_EXTENSION_NAME {name}\n"
            f'#include "{Path(source).name}"\n'
        )
        command = re.sub(r"(?:^|\s)-DTORCH_EXTENSION_NAME=\S+", " ", command)
        command = command.replace(shlex.quote(source), f"{GUEST_BUILD}/{wrapper.name}", 1)
        head, _, rest = command.partition(" ")
        return f"{head} -Winvalid-pch -I {shlex.quote(str(pch_dir))} {rest}"


# --- the runner's side -----------------------------------------------------------------------
def prebuilt_loader(prebuilt: dict[str, dict], tc: str, where: Path):
    """Wrap `torch.utils.cpp_extension.load_inline` in this (the candidate's) process: a
    call whose arguments give a key in `prebuilt` ({key: {"name", "so_b64"}}) imports the
    host's library; any other builds as before. Returns the keys used (filled as calls
    come)."""
    import importlib.util
    import inspect

    import torch.utils.cpp_extension as ce

    original = ce.load_inline
    signature = inspect.signature(original)
    used: list[str] = []

    @functools.wraps(original)
    def load_inline(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)
        spec = normalize(dict(bound.arguments))
        entry = prebuilt.get(spec_key(spec, tc)) if spec is not None else None
        if entry is None:
            return original(*args, **kwargs)
        key = spec_key(spec, tc)
        # a fresh dir every call: the path is derivable from the candidate's own source,
        # and an earlier job of this verification could have planted a library there
        where.mkdir(parents=True, exist_ok=True)
        path = (
            Path(tempfile.mkdtemp(dir=where, prefix=f"prebuilt-{key[:24]}-")) / f"{spec['name']}.so"
        )
        path.write_bytes(base64.b64decode(entry["so_b64"]))
        loaded = importlib.util.spec_from_file_location(spec["name"], str(path))
        module = importlib.util.module_from_spec(loaded)
        loaded.loader.exec_module(module)
        used.append(key)
        return module

    ce.load_inline = load_inline
    return used


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "write":
        sys.exit(_writer_main(sys.argv[2], sys.argv[3]))
    sys.exit("usage: python -m verifiers.kernels.build write SPEC.json BUILD_DIR")
