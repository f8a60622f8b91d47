"""The GPU kernel domains' descriptors, CUDA and Triton, and their verifiers' settings
(stdlib only)."""

import dataclasses

from verifiers.domain import Domain, ExtractRules, PerfMetric, PromptStyle
from verifiers.settings import SettingsError, VerifierSettings, setting

DEVICES = ("cpu", "cuda")
# how the runner times (`runner.time_cuda`)
TIMING_MODES = ("adaptive", "fixed")
TIMING_SLEEPS = ("rule", "issue")
TIMING_SLEEP_DEFAULT = "issue"  # since verifier version 8 (`KernelSettings.timing_sleep`)


@dataclasses.dataclass(frozen=True)
class KernelSettings(VerifierSettings):
    """The CUDA and Triton verifiers' settings (`KernelVerifier(settings=...)`)."""

    domain = "kernel"

    device: str | None = setting(
        None, "where candidates run: cuda or cpu (default: cuda when torch sees a GPU)"
    )
    workers: int | None = setting(
        None, "warm runner processes (default: min(8, cores) with a GPU, min(2, cores) without)"
    )
    cache_dir: str | None = setting(
        None, "the host's nvcc cubin cache (default: $XDG_CACHE_HOME/crucible/kernels)"
    )
    compile_baseline: bool = setting(
        False, "also time torch.compile of the reference (slow, once per task)"
    )
    compile_timeout_s: float = setting(
        60.0,
        "wall-clock seconds a compile may take at least (nvcc legitimately takes tens): "
        "nvcc's limit (its CPU budget as large), and the floor of the runner's build jobs' "
        "(max(3 x Limits.timeout_s, this))",
    )
    timing: str = setting(
        "adaptive",
        "how a candidate and its reference are timed: adaptive (rounds until the median's "
        "interval is within 2%, 10 to 100 runs) or fixed (100 ms of runs by a first "
        "estimate, 10 to 100)",
    )
    timing_sleep: str = setting(
        TIMING_SLEEP_DEFAULT,
        "the GPU sleep queued before each timed run, so the events time the device's work "
        "and not the host's launch in front of it: issue (the rule's, and at least twice "
        "the slowest host-side issue of a forward seen plus 50 us, up to 2 ms: a Triton "
        "forward's Python launch outlasts the rule's on a busy node) or rule (the run's "
        "estimate, 50-200 us; the default before verifier version 8). Host-side work "
        "shorter than the sleep is not in the time (the device's); each timing reports "
        "host_issue_ms beside it",
    )

    one_gpu_job: bool = setting(
        True,
        "on a GPU, a candidate's compile gate job goes on into its correctness trials and "
        "timed runs: one process, one CUDA context, one load (and Triton JIT) for every "
        "gate; false: a second job for the trials, as before",
    )
    timing_pause: bool = setting(
        True,
        "on a GPU, a timed run gets the GPU alone at once: the other running jobs are "
        "stopped whole (SIGSTOP) until it is over, their deadlines moved by the pause; "
        "false: it waits until they have all ended and starts none meanwhile (the drain)",
    )
    confirm_slow: bool = setting(
        True,
        "a `slow` verdict is measured again in a fresh job before it stands: a second "
        "measure that passes is the verdict (the machine's disturbances only ever slow a "
        "timed run: on the H100 node a rename of a 1.08x reference once measured 0.60x); "
        "slow twice is slow, unless the task's eager baseline timed again beside it is over "
        "10 % slower than at first, or the task's own reference verified again misses its "
        "bar: the machine's (timing_drift, retried); false: the first measure is the verdict",
    )
    gpu_connections: int | None = setting(
        1,
        "on a GPU, the hardware work queues of each job's CUDA context "
        "(CUDA_DEVICE_MAX_CONNECTIONS, set before the context exists; null: the driver's "
        "8). Fewer make a fresh context cheaper: 16 jobs' contexts made at once on an H100 "
        "took 0.89 s each at 1 against 2.5 s at 8, 12.1 jobs a second against 4.0 "
        "(bench/probe_job_rate.py), and the catalog batch ran at 431 against 225 a minute "
        "with the same labels and speedups (verifier 14). A candidate has one stream (side "
        "streams and torch's CUDA graphs are refused), so one queue serialises nothing of "
        "its own",
    )
    pch: bool = setting(
        True,
        "compile the C++ unit of load_inline extensions on a precompiled torch/extension.h "
        "(built once per toolchain and flags, ~750 MB in cache_dir/pch)",
    )

    def __post_init__(self) -> None:
        if self.device is not None and self.device not in DEVICES:
            raise SettingsError(
                f"kernel verifier settings: device must be one of {', '.join(DEVICES)} "
                f"or null, not {self.device!r}"
            )
        if self.workers is not None and self.workers < 1:
            raise SettingsError("kernel verifier settings: workers must be at least 1")
        if not self.compile_timeout_s > 0:
            raise SettingsError("kernel verifier settings: compile_timeout_s must be positive")
        if self.gpu_connections is not None and not 1 <= self.gpu_connections <= 32:
            raise SettingsError(
                "kernel verifier settings: gpu_connections must be 1 to 32 (CUDA's range) "
                f"or null for the driver's default, not {self.gpu_connections!r}"
            )
        if self.timing not in TIMING_MODES:
            raise SettingsError(
                f"kernel verifier settings: timing must be one of {', '.join(TIMING_MODES)}, "
                f"not {self.timing!r}"
            )
        if self.timing_sleep not in TIMING_SLEEPS:
            raise SettingsError(
                "kernel verifier settings: timing_sleep must be one of "
                f"{', '.join(TIMING_SLEEPS)}, not {self.timing_sleep!r}"
            )


_PYTHON_FILE = r"\A(?:\s*#[^\n]*)*\s*(?:import\s|from\s+\S+\s+import\s)"

CUDA = Domain(
    name="cuda",
    summary="CUDA C++ kernels in a PyTorch module: correct on fresh inputs, timed on a GPU",
    verifier="verifiers.kernels.verifier:CudaVerifier",
    spec_loader="verifiers.kernels.spec:load_kernel_spec",
    perturb="generators.perturb.kernels:CudaPerturbGenerator",
    resource="GPU",
    install="pip install -e '.[gpu]' and nvcc",
    prompt=PromptStyle(
        "CUDA C++",
        "python",
        "a Python file defining `ModelNew(nn.Module)` whose forward launches your CUDA kernel",
    ),
    extract=ExtractRules(
        entry=r"^\s*class\s+ModelNew\b",
        named_entry=r"^\s*(?:class|def)\s+{name}\b",
        unfenced=_PYTHON_FILE,
        python=True,
        entry_const="ModelNew",
    ),
    syntax="cpp",
    gates=(
        ("parse", "build"),
        ("anticheat", "build"),
        ("compile", "build"),
        ("launch", "run"),
        ("correct", "judge"),
        ("timing", "perf"),
    ),
    perf=PerfMetric("speedup", "higher", "x vs the reference"),
    fast_gates=("compile",),
    importers=(("kernelbench", "verifiers.kernels.importer:import_kernelbench"),),
    settings="verifiers.kernels.domain:KernelSettings",
)

TRITON = dataclasses.replace(
    CUDA,
    name="triton",
    summary="Triton kernels in a PyTorch module: correct on fresh inputs, timed on a GPU",
    verifier="verifiers.kernels.verifier:TritonVerifier",
    perturb="generators.perturb.kernels:TritonPerturbGenerator",
    install="pip install -e '.[gpu]'",
    prompt=PromptStyle(
        "Triton",
        "python",
        "a Python file defining `ModelNew(nn.Module)` whose forward launches your "
        "`@triton.jit` kernel(s)",
    ),
    syntax="python",
)
