"""Compiler and runtime errors of kernel candidates, parsed into taxonomy codes.
Stdlib only: the parent classifies what the runner process reported.

Everything a runner reports about a job came out of a process that ran the candidate's
code, so none of it can make a verdict `infra_error`: an OSError raised there, a message
that reads "no space left" or "bwrap:", a forged result are all the candidate's. Infra
comes only from the host's own channels (the worker could not start, the sandbox's status
byte, nvcc's sandbox), never from here."""

from __future__ import annotations

import re

from verifiers.base import GateFail
from verifiers.contract import Status

# (pattern over nvcc's output, code); the first match wins
_NVCC: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), code)
    for p, code in (
        (
            r'identifier "[^"]+" is undefined|is not a (?:class or )?namespace|'
            r'function "[^"]+" (?:is )?undefined|undefined reference',
            "undefined_identifier",
        ),
        (
            r"too (?:few|many) arguments in function call|no instance of (?:overloaded )?function"
            r"|no suitable constructor|cannot be (?:called|invoked) with",
            "wrong_api",
        ),
        (
            r"cannot be used to initialize|is incompatible with|no suitable conversion|"
            r"operand types are incompatible|expression must have|no operator .* matches|"
            r"cannot be assigned to|a value of type|invalid type conversion|must be a modifiable",
            "type_error",
        ),
        (
            r"uses too much shared data|too much local data|exceeds .*registers",
            "launch_exceeds_limit",
        ),
        (
            r"expected an? |unrecognized token|missing closing|unexpected|expected a \"|"
            r"syntax error|unbalanced|#endif without #if",
            "syntax_error",
        ),
    )
)
_TRITON: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I | re.S), code)
    for p, code in (
        (r"NameError|is not defined", "undefined_identifier"),
        (
            r"module 'triton\.language[^']*' has no attribute|has no attribute|"
            r"unexpected keyword argument|missing \d+ required|takes \d+ positional|"
            r"got multiple values|ImportError|ModuleNotFoundError",
            "wrong_api",
        ),
        (
            r"incompatible|cannot broadcast|must have the same|expected .*type|dtype|"
            r"unsupported tensor|invalid type|TypeError|is not a tensor|shape",
            "type_error",
        ),
        (r"SyntaxError|invalid syntax|IndentationError", "syntax_error"),
    )
)
# a launch the device refused: what cudaGetErrorString / cudaGetErrorName / the driver
# and Triton say, also from inside a load_inline extension
_LAUNCH = re.compile(
    r"invalid configuration argument|cudaErrorInvalidConfiguration|"
    r"too many resources requested|OutOfResources|out of resource|LAUNCH_OUT_OF_RESOURCES|"
    r"CUDA_ERROR_INVALID_VALUE|launch_exceeds_limit|LaunchLimitError|"
    # "invalid argument" (cudaErrorInvalidValue) comes from any API call: a launch's only
    # when its own line says launch (torch's hint line "CUDA_LAUNCH_BLOCKING=1" does not)
    r"(?:(?<!CUDA_)launch(?!_BLOCKING)|>>>)[^\n]{0,80}\binvalid argument\b|"
    r"\binvalid argument\b[^\n]{0,80}(?<!CUDA_)launch(?!_BLOCKING)",
    re.I,
)
_CUDA_FAULT = re.compile(
    r"illegal memory access|misaligned address|unspecified launch failure|"
    r"illegal instruction|CUDA error|cudaError|CUDA_ERROR|an illegal|device-side assert",
    re.I,
)


def nvcc_code(log: str) -> str:
    """The code of the first error (later ones are often knock-on effects of it)."""
    first = next((ln for ln in log.splitlines() if re.search(r"\berror\b", ln)), None)
    for text in ([first] if first else []) + [log]:
        for pat, code in _NVCC:
            if pat.search(text):
                return code
    return "compile_error"


def first_errors(log: str, limit: int = 6) -> str:
    """The lines that say what is wrong (errors first, then the rest), for feedback."""
    lines = log.splitlines()
    errs = [i for i, ln in enumerate(lines) if "error" in ln.lower()]
    keep: list[str] = []
    for i in errs[:limit]:
        keep.extend(lines[i : i + 3])  # the error, the source line, the caret
    return "\n".join(keep or lines[:20])


def nvcc_failure(log: str) -> GateFail:
    """The compile gate's failure for a failed nvcc run: its first error, coded."""
    errors = first_errors(log)
    return GateFail(
        Status.COMPILE_ERROR,
        nvcc_code(log),
        "nvcc: " + (errors.splitlines() or ["failed"])[0][:240],
        feedback=errors,
    )


def classify_python(step: str, error: dict) -> tuple[Status, str]:
    """Status and code for an exception the runner reported at `step`."""
    types = " ".join(error.get("types", [])) + " " + error.get("type", "")
    text = f"{types}\n{error.get('message', '')}"
    # never INFRA from here: the report (types, messages) came from the candidate's process
    if "FakeKernelError" in types:
        return Status.REJECTED, "torch_fallback"
    if "OutOfBoundsWrite" in types:  # a red zone changed (runner.RedZones)
        return Status.WRONG_ANSWER, "out_of_bounds_write"
    # torch.OutOfMemoryError past the runner's share of the card: the candidate's excess
    # (a full card is the machine's: the verifier tells them apart before this)
    if "CandidateProcessLimit" in types or re.search(r"\b(OutOfMemoryError|MemoryError)\b", types):
        if "SIGXCPU" in text:
            return Status.TIMEOUT, "cpu_limit"  # as the base's LIMIT_STATUS has it
        return Status.RESOURCE_LIMIT, "memory_limit"
    if "EmptyLaunchError" in types:
        return Status.RUNTIME_ERROR, "empty_launch"
    if "LaunchLimitError" in types or _LAUNCH.search(text):
        return Status.RUNTIME_ERROR, "launch_exceeds_limit"
    if "KernelArgError" in types:
        return Status.RUNTIME_ERROR, "launch_arg_mismatch"
    compiling = "CompilationError" in types or step in ("load", "aot")
    if compiling:
        if "SyntaxError" in types or "IndentationError" in types:
            return Status.COMPILE_ERROR, "syntax_error"
        for pat, code in _TRITON:
            if pat.search(text):
                return Status.COMPILE_ERROR, code
        return Status.COMPILE_ERROR, "compile_error"
    if _CUDA_FAULT.search(text):
        return Status.RUNTIME_ERROR, "cuda_error"
    if "NameError" in types:
        return Status.RUNTIME_ERROR, "undefined_identifier"
    if "AttributeError" in types or "ImportError" in types:
        return Status.RUNTIME_ERROR, "wrong_api"
    return Status.RUNTIME_ERROR, "kernel_exception"


def feedback_from(error: dict, limit: int = 1500) -> str:
    """The exception and the candidate's own frames (harness frames left out)."""
    tb = error.get("traceback", "")
    frames = []
    for block in re.split(r'(?=\n  File ")', tb):
        if "/crucible/" in block or "candidate" in block:
            frames.append(block.strip("\n"))
    msg = f"{error.get('type', 'Error')}: {error.get('message', '')}".strip()
    body = "\n".join(frames[-3:])
    text = f"{msg}\n{body}" if body else msg
    return text[:limit]
