"""The AscendC verifier: NPU kernels, pyasc's DSL or AscendC C++. Gates, in order:

- `extract` (build): the candidate's parts for the task's path. pyasc: one Python file
  that parses, defines the task's kernel with `@asc.jit` and uses nothing but the DSL (no
  PyTorch / aclnn / NumPy fallback, no path to the interpreter's machinery: `dsl.py`).
  C++: the task's `files`, each after its `// file: <path>` line (Device-Only: the kernel
  alone may come unmarked), the kernel file defining `extern "C" __global__ __aicore__
  void <kernel>(...)`.
- `lower` (build): pyasc's code generator, MLIR passes (verifier, sync insertion) and
  AscendC translation, once per dtype / constant set the task's cases need, in the
  sandbox with pyasc's own interpreter (`pyasc-python`); an error is the candidate's
  `compile_error`, classed by AscendKernelGen's failure classes and pointing at the DSL
  line. The lowered C++ is kept as an artifact (`ascendc_cpp`): what an NPU node compiles.
  A C++ candidate has nothing to lower.
- `static` (build): the C++ (lowered or written) checked without a compiler: every
  `SetFlag` waited on, queues and buffers balanced, no framework fallback in the kernel,
  and on Host+Device the tiling fields the host writes are the ones the kernel reads
  (`static.py`; each rule says why).
- `compile` (build), `precision` (judge), `speedup` (perf): only where CANN runs, through
  `cann.py` (bisheng's direct-launch build, every case against the goldens under the
  abs-and-rel 1e-3 rule, the NPU's own event timing against the expert kernel). Elsewhere
  the first of them ends the verdict as `infra_error` / `no_cann` naming them: retried on
  an NPU node, never a label. Nothing here can earn a pass on every gate.

Trust: pyasc runs the candidate's kernel through its code generator, which calls what the
kernel names; so the lowering runs sandboxed and everything it writes is the candidate's
data. Its C++ is judged exactly as a C++ candidate's would be (static checks here, bisheng
and the goldens on an NPU node); the host reads its files by names of its own, under a
directory named with a nonce, without following links.
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

from verifiers.ascendc import cann, dsl, parts, static
from verifiers.ascendc.domain import DOMAIN, AscendcSettings
from verifiers.ascendc.spec import case_env, evaluate
from verifiers.base import Context, GateFail, Tool, Verifier, fail_on_limit, put_input
from verifiers.contract import Artifact, Status, Task
from verifiers.feedback import trim
from verifiers.warm import OutputRefused, read_beneath

INSTALL = DOMAIN.install
PYASC = "pyasc-python"
DRIVER = (Path(__file__).with_name("lower_driver.py")).read_text(encoding="utf-8")
MAX_VARIANTS = 8  # lowerings per candidate (dtype x constant sets of the cases)
MAX_CPP = 1 << 20  # bytes of one lowered file the host reads
MAX_RESULT = 64 * 1024
_ENTRY = r'extern\s*"C"\s+__global__\s+__aicore__\s+void\s+{name}\s*\('


class AscendcVerifier(Verifier):
    domain = "ascendc"
    name = "ascendc-pyasc"
    version = "1"
    resource = DOMAIN.resource
    gates = DOMAIN.gate_names
    partial_versions = True  # a verdict of the gates that run off an NPU is not a full one
    threaded_batches = True  # a candidate is tool processes: threads only wait
    tools = (
        Tool(
            "pyasc",
            PYASC,
            (PYASC, "-c", "import importlib.metadata as m; print('pyasc', m.version('pyasc'))"),
            INSTALL,
        ),
    )

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        if not isinstance(self.settings, AscendcSettings):
            self.settings = AscendcSettings()

    # --- extract ------------------------------------------------------------------------
    def gate_extract(self, ctx: Context) -> str:
        h, kernel = ctx.task.harness, ctx.task.interface["kernel"]
        if h["form"] == "pyasc":
            found = dsl.check_source(ctx.code, kernel)
            if found is not None:
                where = f"line {found.line}: " if found.line else ""
                raise GateFail(
                    found.status,
                    found.code,
                    where + found.message,
                    feedback=_excerpt(ctx.code, found.line, where + found.message),
                )
            return f"pyasc kernel {kernel}"
        try:
            p = parts.split(ctx.code, h["files"], h["path"])
        except parts.PartsError as e:
            raise GateFail(Status.FORMAT_ERROR, "missing_entry_point", str(e)) from None
        if not re.search(_ENTRY.format(name=re.escape(kernel)), _strip_comments(p.text(p.kernel))):
            raise GateFail(
                Status.FORMAT_ERROR,
                "missing_entry_point",
                f'{p.kernel} does not define extern "C" __global__ __aicore__ void {kernel}(...)',
            )
        ctx.state["parts"] = p
        return f"{len(p.files)} file(s): " + ", ".join(p.files)

    # --- lower --------------------------------------------------------------------------
    def gate_lower(self, ctx: Context) -> str:
        h = ctx.task.harness
        if h["form"] != "pyasc":
            return "a C++ candidate: nothing to lower"
        variants = lowering_variants(ctx.task)
        out = f"lowered-{secrets.token_hex(8)}"
        (ctx.workdir / out).mkdir(mode=0o777)
        (ctx.workdir / out).chmod(0o777)  # the sandbox's uid writes there
        put_input(ctx, "candidate.py", ctx.code)
        job = {
            "source": "candidate.py",
            "kernel": ctx.task.interface["kernel"],
            "out": out,
            "variants": variants,
        }
        put_input(ctx, "job.json", json.dumps(job))
        res = ctx.run(
            [PYASC, "-I", "-B", "-c", DRIVER, "job.json"],
            timeout_s=min(self.settings.lower_timeout_s, max(ctx.limits.timeout_s, 1.0) * 3),
        )
        fail_on_limit(res, "pyasc lowering")
        try:
            raw = read_beneath(ctx.workdir, ctx.workdir / out / "result.json", MAX_RESULT)
            result = json.loads(raw)
        except (OSError, OutputRefused, ValueError):
            tail = trim(res.stderr or res.stdout or "", 1500)
            if res.returncode < 0 or "Segmentation" in tail or "core dumped" in tail:
                raise GateFail(
                    Status.RUNTIME_ERROR,
                    "lowering_failed",
                    f"pyasc crashed lowering the kernel (exit {res.returncode})",
                    feedback=tail,
                ) from None
            raise GateFail(
                Status.COMPILE_ERROR,
                "lowering_failed",
                f"the lowering left no result (exit {res.returncode})",
                feedback=tail,
            ) from None
        if not isinstance(result, dict):
            raise GateFail(
                Status.COMPILE_ERROR, "lowering_failed", "the lowering's result is not an object"
            )
        if "error" in result:
            self._lowering_failed(ctx, result["error"])
        lowered: dict[str, str] = {}
        for v in variants:
            try:
                data = read_beneath(ctx.workdir, ctx.workdir / out / f"{v['key']}.cpp", MAX_CPP)
            except (OSError, OutputRefused) as e:
                # the reason without the host's path (its nonce dir): the same every run
                why = str(e).replace(str(ctx.workdir / out), "<out>")
                raise GateFail(
                    Status.COMPILE_ERROR, "lowering_failed", f"no lowered C++ for {v['key']}: {why}"
                ) from None
            text = data.decode("utf-8", "replace")
            kernel = ctx.task.interface["kernel"]
            if not re.search(_ENTRY.format(name=re.escape(kernel)), _strip_comments(text)):
                # the lowering process runs the candidate's Python: what it left is its data
                raise GateFail(
                    Status.COMPILE_ERROR,
                    "lowering_failed",
                    f'the lowered C++ for {v["key"]} defines no extern "C" __global__ '
                    f"__aicore__ void {kernel}(...)",
                )
            lowered[f"lowered/{v['key']}.cpp"] = text
            ctx.artifacts.append(
                Artifact("ascendc_cpp", f"{ctx.task.interface['kernel']}_{v['key']}.cpp", data)
            )
        ctx.state["lowered"] = lowered
        ctx.metrics["lowered_variants"] = sorted(v["key"] for v in variants)
        return f"lowered {len(lowered)} variant(s): " + ", ".join(sorted(lowered))

    def _lowering_failed(self, ctx: Context, err: Any) -> None:
        if not isinstance(err, dict):
            raise GateFail(Status.COMPILE_ERROR, "lowering_failed", "the lowering failed")
        etype, msg = str(err.get("type", "Error"))[:80], str(err.get("message", ""))[:2000]
        line = err.get("line") if isinstance(err.get("line"), int) else None
        code = dsl.classify_lowering(etype, msg)
        where = f"line {line}: " if line else ""
        first = dsl.headline(msg) or etype
        detail = f"{where}pyasc: {etype}: {first}"[:300]
        feedback = _excerpt(ctx.code, line, f"{etype}: {msg}")
        hints = err.get("hints") if isinstance(err.get("hints"), list) else []
        shown = [h[:700] for h in hints[:6] if isinstance(h, str)]
        if shown:  # the DSL's signature and the AscendC prototype of what the line calls
            feedback = trim(feedback + "\nthe API:\n" + "\n".join(shown), 3000)
        raise GateFail(dsl.LOWER_STATUS, code, detail, feedback=feedback)

    # --- static -------------------------------------------------------------------------
    def gate_static(self, ctx: Context) -> str:
        h = ctx.task.harness
        if h["form"] == "pyasc":
            files = ctx.state.get("lowered", {})
            checks = [(dict([(name, text)]), name, None, None) for name, text in files.items()]
        else:
            p: parts.Parts = ctx.state["parts"]
            checks = [(p.files, p.kernel, p.host, p.tiling)]
        n = 0
        for files, kernel, host, tiling in checks:
            found = static.check(files, kernel, host, tiling, h["path"])
            n += 1
            if found:
                f = found[0]
                where = f"{f.file}:{f.line}: " if f.line else f"{f.file}: "
                more = "".join(f"\n- {x.file}:{x.line or '?'}: {x.message}" for x in found[1:8])
                raise GateFail(
                    f.status,
                    f.code,
                    (where + f.message)[:300],
                    feedback=f"{where}{f.message}\nwhy: {f.rationale}{more}",
                )
        return f"static checks clean on {n} translation unit(s)"

    # --- where CANN runs ----------------------------------------------------------------
    def _cann(self, ctx: Context) -> cann.CannNode:
        node = cann.probe()
        if node is None:
            wanted = [g for g in cann.CANN_GATES if g in self._wanted(ctx.limits)]
            raise GateFail(
                Status.INFRA_ERROR,
                "no_cann",
                f"{', '.join(wanted)} need CANN (bisheng and an Ascend NPU or CANN's "
                f"simulator); this node has none ({cann.missing()}): retried on an NPU node",
            )
        return node

    def gate_compile(self, ctx: Context) -> str:
        node = self._cann(ctx)
        return cann.compile_gate(node, ctx, self.settings)

    def gate_precision(self, ctx: Context) -> str:
        node = self._cann(ctx)
        return cann.precision_gate(node, ctx, self.settings)

    def gate_speedup(self, ctx: Context) -> str:
        node = self._cann(ctx)
        return cann.speedup_gate(node, ctx, self.settings)


def lowering_variants(task: Task) -> list[dict[str, Any]]:
    """One lowering per (dtype, constexpr values) the task's cases need, at most
    MAX_VARIANTS (the first ones, in case order): each {key, dtype, args}."""
    h, args = task.harness, task.interface["args"]
    seen: dict[str, dict[str, Any]] = {}
    for case in h["cases"]:
        env = case_env(case, h["block_dim"])
        resolved = []
        for a in args:
            a = dict(a)
            if a["kind"] == "constexpr":
                a["int"] = evaluate(a["value"], env)
            resolved.append(a)
        consts = "_".join(str(a["int"]) for a in resolved if a["kind"] == "constexpr")
        key = case["dtype"] + (f"_{consts}" if consts else "")
        if key not in seen and len(seen) < MAX_VARIANTS:
            seen[key] = {"key": key, "dtype": case["dtype"], "args": resolved}
    return list(seen.values())


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _excerpt(code: str, line: int | None, message: str) -> str:
    """The message with the candidate's line (and one either side) for a repair prompt."""
    if not line:
        return trim(message, 1500)
    lines = code.splitlines()
    lo, hi = max(1, line - 1), min(len(lines), line + 1)
    shown = "\n".join(
        f"{'>' if n == line else ' '} {n:4d} | {lines[n - 1]}" for n in range(lo, hi + 1)
    )
    return trim(f"{message}\n{shown}", 1500)
