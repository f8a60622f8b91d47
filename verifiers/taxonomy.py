"""The error taxonomy: stable snake_case codes, each in one category.

Defined once here; `sql/error_taxonomy.sql` groups by the same strings and
`tests/verifiers/test_taxonomy.py` checks the two agree.
"""

from __future__ import annotations

SYNTAX = "syntax"
API = "api"
FUNCTIONAL = "functional"
FORMAT = "format"
PERFORMANCE = "performance"
TIMEOUT = "timeout"
RESOURCE = "resource"
INFRA = "infra"
CATEGORIES = (SYNTAX, API, FUNCTIONAL, FORMAT, PERFORMANCE, TIMEOUT, RESOURCE, INFRA)

# code -> (category, one-line meaning)
CODES: dict[str, tuple[str, str]] = {
    # syntax: the code does not compile / elaborate
    "malformed_literal": (SYNTAX, "a number literal with digits its base does not allow"),
    "port_mismatch": (SYNTAX, "a port required by the interface is missing, extra or misnamed"),
    "width_mismatch": (SYNTAX, "a port or expression has a width other than the interface's"),
    "undeclared_identifier": (SYNTAX, "a name used but never declared"),
    "syntax_error": (SYNTAX, "the parser rejected the text"),
    "unknown_module": (SYNTAX, "an instantiated module is defined nowhere"),
    "compile_error": (SYNTAX, "the compiler failed for another reason"),
    "unsynthesizable": (SYNTAX, "simulates but does not synthesize to hardware"),
    "type_error": (SYNTAX, "operand or argument types the compiler rejects"),
    "unknown_instruction": (SYNTAX, "a mnemonic the assembler does not know"),
    "bad_operand": (
        SYNTAX,
        "an operand the instruction does not take (type, size suffix, register name)",
    ),
    # api: wrong use of a library / toolchain API
    "undefined_symbol": (API, "a function, task or symbol the toolchain does not provide"),
    "undefined_identifier": (API, "a CUDA / Triton / Python name that is defined nowhere"),
    "wrong_api": (API, "a library call the API does not offer or takes other arguments"),
    "launch_arg_mismatch": (API, "a kernel launched with arguments unlike its parameters"),
    "bad_selector": (API, "a CadQuery selector string that does not parse"),
    "api_not_allowed": (
        API,
        "calls a HAL / library function the task's API surface does not allow",
    ),
    "api_not_used": (API, "never calls a HAL function the task requires"),
    "isa_not_allowed": (API, "an instruction outside the task's target ISA (AVX-512 on x86-64-v3)"),
    "cad_operation_failed": (
        API,
        "a CadQuery / OCC operation refused this geometry (fillet, shell, boolean, loft)",
    ),
    # AscendC (AscendKernelGen's failure classes, from bisheng's diagnostics or pyasc's)
    "api_signature": (
        API,
        "an AscendC call that matches no signature or overload of the API (or no API at all)",
    ),
    "type_cast": (SYNTAX, "AscendC operand types or casts the compiler rejects"),
    "scope_lifetime": (SYNTAX, "a name used outside its scope or lifetime (undeclared, redefined)"),
    "memory_object": (
        API,
        "a GlobalTensor / LocalTensor / TQue / TBuf / TPipe object used as its API does not allow",
    ),
    "lowering_failed": (SYNTAX, "pyasc's code generator or MLIR passes rejected the DSL kernel"),
    "tiling_mismatch": (
        API,
        "the tiling fields the host writes and the ones the kernel reads differ by name or type",
    ),
    # functional: runs, but computes the wrong thing
    "sync_unpaired": (
        FUNCTIONAL,
        "an AscendC SetFlag with no WaitFlag on the same event (a pipeline race), or the reverse",
    ),
    "queue_unbalanced": (
        FUNCTIONAL,
        "AscendC EnQue / DeQue or AllocTensor / FreeTensor unbalanced",
    ),
    "sim_mismatch": (FUNCTIONAL, "outputs differ from the reference model in simulation"),
    "equivalence_counterexample": (FUNCTIONAL, "formal check found inputs where it differs"),
    "no_testbench_report": (FUNCTIONAL, "the simulation ended without the testbench's report"),
    "sim_runtime_error": (FUNCTIONAL, "the simulator stopped with an error"),
    # a finding on a verdict (metrics["sim_disagreement"]), never a verdict's own code
    "sim_disagreement": (
        FUNCTIONAL,
        "iverilog and verilator disagree on the design (a race, X-dependence, event order)",
    ),
    "testbench_tampering": (FUNCTIONAL, "reaches into the testbench or the simulation control"),
    "forbidden_system_task": (FUNCTIONAL, "calls a system task a design under test may not use"),
    "numeric_mismatch": (FUNCTIONAL, "outputs differ from the reference beyond the tolerance"),
    "nan_output": (FUNCTIONAL, "an output holds NaN: an element never written, or invalid math"),
    "shape_mismatch": (FUNCTIONAL, "an output's shape, dtype or count differs from the reference"),
    "cuda_error": (FUNCTIONAL, "a CUDA error while running (illegal address, misaligned access)"),
    "kernel_exception": (FUNCTIONAL, "the candidate raised an exception while running"),
    "empty_launch": (FUNCTIONAL, "a launch with a zero grid or block dimension: nothing runs"),
    "torch_fallback": (FUNCTIONAL, "calls the PyTorch op it should implement"),
    "torch_compute": (FUNCTIONAL, "computes with torch outside its kernels"),
    "try_except_fallback": (FUNCTIONAL, "catches exceptions around its kernels"),
    "reads_reference": (FUNCTIONAL, "reaches the reference or introspects the harness"),
    "timing_games": (FUNCTIONAL, "touches timing, streams or global state"),
    "side_stream": (FUNCTIONAL, "puts its work on a stream of its own, off the timed stream"),
    "inputs_mutated": (FUNCTIONAL, "forward changed its input tensors"),
    "implausible_speedup": (
        FUNCTIONAL,
        "timed faster than the card's peak bandwidth or FLOPs allow: work the timing missed",
    ),
    "forbidden_import": (FUNCTIONAL, "imports a module a kernel has no use for"),
    "forbidden_call": (FUNCTIONAL, "file access, dynamic code or introspection in a CAD script"),
    "script_exception": (FUNCTIONAL, "the script raised an exception of its own"),
    "script_crash": (FUNCTIONAL, "the script's process died (a crash inside the CAD kernel)"),
    "invalid_solid": (FUNCTIONAL, "not a valid closed solid with positive volume"),
    "solid_count": (FUNCTIONAL, "a different number of separate solids than the part has"),
    "geometry_mismatch": (FUNCTIONAL, "the shape's IoU with the reference is below the mark"),
    "geometry_orientation": (
        FUNCTIONAL,
        "the right shape in the wrong orientation (axes swapped, 90° turns, Euler order)",
    ),
    "geometry_misplaced": (FUNCTIONAL, "the right shape in the wrong place"),
    "surface_deviation": (FUNCTIONAL, "surfaces differ past the tolerance (a small feature)"),
    "semihosting_call": (FUNCTIONAL, "firmware code that traps to the emulator's host itself"),
    "forbidden_host_call": (
        FUNCTIONAL,
        "firmware that asked the host to run a program or open files",
    ),
    "hard_fault": (FUNCTIONAL, "the firmware faulted (HardFault, BusFault, UsageFault, MemManage)"),
    "unhandled_interrupt": (
        FUNCTIONAL,
        "an interrupt reached the default handler (its handler is missing or misspelt)",
    ),
    "event_missing": (FUNCTIONAL, "the test waited for an interrupt or event that never came"),
    "exit_code_mismatch": (FUNCTIONAL, "the firmware's test ended with another exit code"),
    "uart_mismatch": (FUNCTIONAL, "the UART transcript differs from the expected one"),
    "register_mismatch": (FUNCTIONAL, "peripheral registers written with other values"),
    "exit_state_mismatch": (
        FUNCTIONAL,
        "the core's state when the test returned (PRIMASK, BASEPRI, VTOR, SysTick) is not "
        "what the task requires",
    ),
    "unsupported_peripheral_access": (
        FUNCTIONAL,
        "a multiple / doubleword / exclusive load or store of a peripheral register, which "
        "the firmware's register model does not serve",
    ),
    "output_mismatch": (
        FUNCTIONAL,
        "returns or writes something other than the reference on a test input",
    ),
    "out_of_bounds_write": (
        FUNCTIONAL,
        "writes outside the buffers it was given, or into an input it must not change",
    ),
    "abi_violation": (
        FUNCTIONAL,
        "breaks the calling convention: a callee-saved register, the stack pointer or its "
        "alignment at a call, the direction flag, MXCSR",
    ),
    "crash": (FUNCTIONAL, "the code faulted (SIGSEGV, SIGBUS, SIGFPE, SIGILL)"),
    "forbidden_syscall": (FUNCTIONAL, "made a system call the harness does not allow"),
    "resisted_stop": (
        FUNCTIONAL,
        "kept its processes running while the host had stopped them (SIGCONT among them)",
    ),
    "forbidden_instruction": (
        FUNCTIONAL,
        "holds an instruction no optimized function needs: a system call, a trap, a "
        "valgrind client request",
    ),
    "forbidden_section": (
        FUNCTIONAL,
        "a section that runs before the harness (constructors) or code that writes itself",
    ),
    "writable_state": (FUNCTIONAL, "keeps writable static data a pure function has no use for"),
    "abnormal_exit": (
        FUNCTIONAL,
        "the process ended before every call returned (an exit, or stray output)",
    ),
    "nonzero_exit": (FUNCTIONAL, "the program exited with a non-zero status"),
    # format: no usable code
    "empty_code": (FORMAT, "the candidate is empty"),
    "not_text": (FORMAT, "the candidate is not UTF-8 text"),
    "code_too_large": (FORMAT, "the candidate exceeds the size limit"),
    "missing_entry_point": (FORMAT, "the required module / function is not defined"),
    "no_result": (FORMAT, "the CAD script leaves no shape in `result` or show_object"),
    # performance
    "slow": (PERFORMANCE, "correct but below the task's speed bar"),
    "copies_input": (PERFORMANCE, "the output is a copy of the input"),
    "copied_input": (PERFORMANCE, "the candidate is the baseline it was given, copied"),
    # timeout / resource
    "sim_timeout": (TIMEOUT, "the simulation did not finish in the wall-clock limit"),
    "tool_timeout": (TIMEOUT, "a tool run did not finish in the wall-clock limit"),
    "output_limit": (RESOURCE, "printed more than the output cap"),
    "memory_limit": (RESOURCE, "exceeded the memory limit"),
    "cpu_limit": (TIMEOUT, "spent its whole CPU-time budget without finishing"),
    "file_size_limit": (RESOURCE, "wrote a file larger than the limit"),
    "launch_exceeds_limit": (
        RESOURCE,
        "a launch past the device's grid/block/shared/register limits",
    ),
    "firmware_hang": (
        TIMEOUT,
        "the firmware never finished (a loop, an interrupt that never came)",
    ),
    "firmware_too_large": (RESOURCE, "the firmware does not fit the chip's flash or RAM"),
    "trace_limit": (RESOURCE, "more peripheral accesses than the register trace holds"),
    "register_poll_hang": (
        TIMEOUT,
        "the firmware polls a peripheral register for a bit that never comes (the register "
        "model answers as the chip would; or the reference never touches that register)",
    ),
    "kernel_timeout": (TIMEOUT, "the candidate's kernels did not finish in the wall-clock limit"),
    # infra: never the candidate's fault
    "tool_missing": (INFRA, "a required tool is not installed"),
    "sandbox_unavailable": (INFRA, "the sandbox could not be set up"),
    "tool_crash": (INFRA, "a tool crashed on input it should handle"),
    "harness_error": (INFRA, "the task's own harness is broken"),
    "no_gpu": (INFRA, "a gate needs a GPU and this node has none"),
    "no_cann": (
        INFRA,
        "a gate needs CANN (bisheng, an Ascend NPU or its simulator) and this node has none",
    ),
    "machine_slow": (
        INFRA,
        "stopped by the wall clock with its CPU time under budget: the machine was slow",
    ),
    "killed_externally": (
        INFRA,
        "killed by a signal it did not cause (the OOM killer, a kill from outside)",
    ),
    "emulator_unmodelled_register": (
        INFRA,
        "the firmware polls a register the emulator does not model: an emulator limit",
    ),
    "gpu_memory": (INFRA, "the GPU had no room for the job (other jobs held the card)"),
    "gpu_unavailable": (
        INFRA,
        "the job's process could not use the GPU before the candidate's code ran "
        "(the driver, the device or an MPS server failed)",
    ),
    "draw_disturbed": (
        INFRA,
        "the verifier's own draw of a trial's inputs (or the reference's weights) came out "
        "different twice: something else in its process drew from torch's random generators",
    ),
    "gpu_not_quiet": (
        INFRA,
        "another process's work stayed on the GPU: the timed runs were not made",
    ),
    "gpu_clock_low": (
        INFRA,
        "the GPU's SM clock stayed low after it was kept busy (a throttled card): the "
        "timed runs were not made",
    ),
    "timing_drift": (
        INFRA,
        "a slow verdict measured again, but the task's eager baseline timed beside it was "
        "slower than when first measured, or the task's own reference verified again "
        "missed its bar: the machine slowed, not the candidate",
    ),
    "node_lost": (
        INFRA,
        "the Ray node verifying it was lost and no node offering its resource came back",
    ),
    "verifier_crashed": (
        INFRA,
        "the verifier itself raised (a bug in Crucible, not the candidate): no reward, retried",
    ),
    "worker_died": (
        INFRA,
        "the verifier worker holding it died (a crash, the OOM killer, a kill from outside) "
        "and Ray's restarts of it were spent",
    ),
    "uninitialized_state": (
        FUNCTIONAL,
        "outputs depend on what registers without reset or initial value hold at power-up",
    ),
}


def category_of(code: str) -> str:
    try:
        return CODES[code][0]
    except KeyError:
        raise ValueError(
            f"unknown taxonomy code {code!r}; add it to verifiers/taxonomy.py"
        ) from None
