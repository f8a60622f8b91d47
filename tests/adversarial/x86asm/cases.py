"""Hostile x86-64 assembly for the x86asm verifier: what each one tries, by mechanism.

Each case is the fixture task's reference answer (tests/fixtures/x86asm/add_scaled) with
hostile code put at the function's entry (or a section added); `Outside.fill` fills
{SECRET_HOME}, {SECRET_TMP}, {TMP}. `front` is the status family (and `code`, the taxonomy
code) through the front door, where the static gate refuses system calls, traps, valgrind
client requests, constructors and writable code; `runtime` (and `runtime_code`), where set,
is what the same code earns with the static rules switched off (a test-only subclass), so
the driver's seccomp filter, the sandbox and the harness's checks are what stop it. A case
that finds its attack refused goes on to do the task, so only the attack decides. Ids read
`mechanism-what`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from tests.adversarial.harness import CANDIDATE_FAULT, LIMITS
from verifiers.catalog import load_task
from verifiers.contract import Status

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "x86asm" / "add_scaled"
ENTRY = "add_scaled:\n"
REJECTED = {Status.REJECTED}
RUNTIME = {Status.RUNTIME_ERROR}
WRONG = {Status.WRONG_ANSWER}


@functools.cache  # ~25 cases build on it at import; a load draws ~0.1 s of test data
def reference() -> str:
    return load_task(FIXTURE, "x86asm").reference


@functools.cache
def baseline_o3() -> str:
    return load_task(FIXTURE, "x86asm").harness["baselines"]["O3"]


def at_entry(body: str, data: str = "") -> str:
    ref = reference()
    assert ENTRY in ref
    return ref.replace(ENTRY, ENTRY + body, 1) + data


def string(label: str, text: str) -> str:
    return f'\t.section .rodata\n{label}:\n\t.string "{text}"\n'


@dataclass(frozen=True)
class Case:
    id: str
    code: str
    front: frozenset
    code_front: str | None = None
    runtime: frozenset | None = None
    code_runtime: str | None = None


def case(id_, code, front=CANDIDATE_FAULT, code_front=None, runtime=None, code_runtime=None):
    return Case(
        id_,
        code,
        frozenset(front),
        code_front,
        frozenset(runtime) if runtime else None,
        code_runtime,
    )


def syscall_case(id_: str, body: str, data: str = "", runtime_code="forbidden_syscall") -> Case:
    """A raw system call: refused statically; past that, killed by the driver's filter
    (or, for the two calls the driver itself needs, write and exit, judged by what the
    run then shows)."""
    code = at_entry(body, data)
    return case(id_, code, REJECTED, "forbidden_instruction", RUNTIME, runtime_code)


# valgrind's client request: %rax -> {request, 5 args}, the rol preamble, xchg %rbx,%rbx
CLIENT_REQUEST = """\tsubq $56, %rsp
\tmovq $0x{request:x}, (%rsp)
\tmovq $0, 8(%rsp)
\tmovq $0, 16(%rsp)
\tmovq %rsp, %rax
\txorl %edx, %edx
\trolq $3, %rdi
\trolq $13, %rdi
\trolq $61, %rdi
\trolq $51, %rdi
\txchgq %rbx, %rbx
\taddq $56, %rsp
"""
ZERO_STATS, TOGGLE_COLLECT = 0x43540001, 0x43540002
# the fixture's n is %rcx: code run only when n > 3000 (the task's range stops at 200)
LARGE = "\tcmpq $3000, %rcx\n\tjbe 7f\n{}7:\n"
# the last element left out when lo <= n < hi
BAND = (
    "\tcmpq ${lo}, %rcx\n\tjb 7f\n\tmovabsq ${hi}, %rax\n\tcmpq %rax, %rcx\n\tjae 7f\n"
    "\tdecq %rcx\n7:\n"
)
SLOW = {Status.SLOW}


# --- timing the candidate can warm up (#29): a routine ~2.5x slower than the baseline, a
# fence every fourth iteration of its loop (fewer instructions than the baseline, so the
# count alone lets it through), that keeps what it learnt in one pass for the next: the
# untimed warm-up pass fills the memo, every timed pass of the same inputs reads it, and the
# wall time shows the memo's speed. Callgrind counts one pass, the honest code's.
def _body(suffix: str, slow: bool) -> str:
    ref = reference()
    body = ref[ref.index(ENTRY) + len(ENTRY) : ref.index("\t.size")]
    body = re.sub(r"(\.L\d+)", r"\1" + suffix, body)
    store = "\tvmovdqu\t%ymm0, (%rdi,%rax)\n"
    assert store in body
    fence = "\ttestq\t$96, %rax\n\tjne\t1f\n\tlfence\n1:\n"
    return body.replace(store, store + fence) if slow else body


def slow_or_memo(prologue: str) -> str:
    """The fixture's function as `.Lslow` (fenced) and `.Lfast` (the reference), entered
    through `prologue`, which decides."""
    ref = reference()
    head = ref[: ref.index(ENTRY) + len(ENTRY)]
    return (
        head + prologue + ".Lslow:\n" + _body("s", True) + ".Lfast:\n" + _body("f", False)
        + ref[ref.index("\t.size") :]
    )  # fmt: skip


# the results themselves, kept 320 KiB below the stack pointer (the writable-state rule
# sees sections, not the stack): 16 slots of (dst, src, k, src[0], dst[0]) and the 8 KiB
# of dst after the call; a hit copies them back (perf calls only, n = 2048)
MEMO_BELOW_RSP = """\tcmpq\t$2048, %rcx
\tjne\t.Lslow
\tmovq\t%rsp, %r11
\tsubq\t$0x60000, %rsp
\tleaq\t0x10000(%rsp), %r8
\txorl\t%r9d, %r9d
.Lprobe:
\timulq\t$8224, %r9, %r10
\taddq\t%r8, %r10
\tcmpq\t%rdi, (%r10)
\tjne\t.Lnext
\tcmpq\t%rsi, 8(%r10)
\tjne\t.Lnext
\tcmpl\t%edx, 16(%r10)
\tjne\t.Lnext
\tmovl\t(%rsi), %eax
\tcmpl\t%eax, 20(%r10)
\tjne\t.Lnext
\tmovl\t(%rdi), %eax
\tcmpl\t%eax, 24(%r10)
\tjne\t.Lnext
\txorl\t%eax, %eax
.Lcopy:
\tvmovdqu\t32(%r10,%rax), %ymm0
\tvmovdqu\t%ymm0, (%rdi,%rax)
\taddq\t$32, %rax
\tcmpq\t$8192, %rax
\tjne\t.Lcopy
\tmovq\t%r11, %rsp
\tvzeroupper
\tret
.Lnext:
\tincq\t%r9
\tcmpq\t$16, %r9
\tjb\t.Lprobe
\tmovq\t-8(%r8), %r9
\tandq\t$15, %r9
\tleaq\t1(%r9), %rax
\tmovq\t%rax, -8(%r8)
\timulq\t$8224, %r9, %r10
\taddq\t%r8, %r10
\tmovq\t%rdi, (%r10)
\tmovq\t%rsi, 8(%r10)
\tmovl\t%edx, 16(%r10)
\tmovl\t(%rsi), %eax
\tmovl\t%eax, 20(%r10)
\tmovl\t(%rdi), %eax
\tmovl\t%eax, 24(%r10)
\tcall\t.Lslow
\txorl\t%eax, %eax
.Lkeep:
\tvmovdqu\t(%rdi,%rax), %ymm0
\tvmovdqu\t%ymm0, 32(%r10,%rax)
\taddq\t$32, %rax
\tcmpq\t$8192, %rax
\tjne\t.Lkeep
\tmovq\t%r11, %rsp
\tvzeroupper
\tret
"""
# only what it has seen, in the low halves of %xmm12-15 (caller-saved, so nothing checks
# them; the driver's own code between passes never touches them): 16 keys of (src[0], dst,
# k); an input seen before takes the fast code
SEEN_IN_XMM = """\tcmpq\t$2048, %rcx
\tjne\t.Lslow
\tmovl\t(%rsi), %eax
\txorl\t%edi, %eax
\txorl\t%edx, %eax
\tvmovd\t%eax, %xmm11
\tvpshufd\t$0, %xmm11, %xmm11
\tvpcmpeqd\t%xmm11, %xmm12, %xmm10
\tvpcmpeqd\t%xmm11, %xmm13, %xmm9
\tvpor\t%xmm9, %xmm10, %xmm10
\tvpcmpeqd\t%xmm11, %xmm14, %xmm9
\tvpor\t%xmm9, %xmm10, %xmm10
\tvpcmpeqd\t%xmm11, %xmm15, %xmm9
\tvpor\t%xmm9, %xmm10, %xmm10
\tvptest\t%xmm10, %xmm10
\tjnz\t.Lfast
\tvpalignr\t$12, %xmm14, %xmm15, %xmm15
\tvpalignr\t$12, %xmm13, %xmm14, %xmm14
\tvpalignr\t$12, %xmm12, %xmm13, %xmm13
\tvpalignr\t$12, %xmm11, %xmm12, %xmm12
\tjmp\t.Lslow
"""


# --- speed decided by noise (#29): the -O3 baseline one instruction shorter per call (n-1
# <= 2 asked as n <= 3: 16 fewer instructions in ~121,000, 1.0001x), the same time
def noise_level(baseline: str, realign: bool) -> str:
    old = "\tleaq\t-1(%rcx), %rax\n\tcmpq\t$2, %rax\n\tjbe\t.L8\n"
    assert old in baseline
    code = baseline.replace(old, "\tcmpq\t$3, %rcx\n\tjbe\t.L8\n", 1)
    if realign:  # and its loops placed on other boundaries: only where the time falls moves
        code = code.replace("\t.p2align 4,,10\n\t.p2align 3\n", "\t.p2align 5\n")
    return code


ALL = (
    # --- the classics -------------------------------------------------------------------
    case("classics-busy_hang", at_entry("1:\tjmp 1b\n"), LIMITS),
    # the assembler itself made to print without end
    case(
        "classics-assembler_flood",
        '.rept 40000\n.warning "flood flood flood flood flood flood flood"\n.endr\n' + reference(),
        {Status.RESOURCE_LIMIT},
        "output_limit",
    ),
    case(
        "classics-assembler_bomb",
        ".rept 100000000\n.rept 100000000\nnop\n.endr\n.endr\n" + reference(),
        LIMITS,
    ),
    syscall_case("classics-fork_bomb", "1:\tmovl $57, %eax\n\tsyscall\n\tjmp 1b\n"),
    case(
        "classics-stack_overflow",
        at_entry("1:\tpushq %rax\n\tjmp 1b\n"),
        RUNTIME,
        "crash",
    ),
    # --- system calls ----------------------------------------------------------------------
    syscall_case(
        "syscall-execve_shell",
        "\tleaq sh(%rip), %rdi\n\txorl %esi, %esi\n\txorl %edx, %edx\n"
        "\tmovl $59, %eax\n\tsyscall\n",
        string("sh", "/bin/sh"),
    ),
    syscall_case(
        "syscall-socket_connect",
        "\tmovl $2, %edi\n\tmovl $1, %esi\n\txorl %edx, %edx\n\tmovl $41, %eax\n\tsyscall\n",
    ),
    syscall_case("syscall-ptrace_traceme", "\txorl %edi, %edi\n\tmovl $101, %eax\n\tsyscall\n"),
    syscall_case(
        "syscall-write_outside_workdir",
        "\tleaq path(%rip), %rdi\n\tmovl $0x241, %esi\n\tmovl $0644, %edx\n"
        "\tmovl $2, %eax\n\tsyscall\n",
        string("path", "{TMP}/crucible-x86asm-planted"),
    ),
    syscall_case(
        "syscall-read_secret",
        "\tleaq path(%rip), %rdi\n\txorl %esi, %esi\n\tmovl $2, %eax\n\tsyscall\n",
        string("path", "{SECRET_HOME}"),
    ),
    syscall_case("syscall-int80_execve", "\tmovl $11, %eax\n\tint $0x80\n"),
    syscall_case(
        "syscall-mprotect_own_text",
        "\tleaq add_scaled(%rip), %rdi\n\tandq $-4096, %rdi\n\tmovl $4096, %esi\n"
        "\tmovl $7, %edx\n\tmovl $10, %eax\n\tsyscall\n",
    ),
    # the syscall bytes hidden in an immediate, reached by jumping into the instruction:
    # objdump decodes a mov; the driver's filter still kills the call
    case(
        "syscall-hidden_in_immediate",
        at_entry("\tmovl $57, %eax\n\tjmp 2f+1\n2:\tmovl $0x90050f, %ecx\n"),
        RUNTIME,
        "forbidden_syscall",
    ),
    # --- code that runs before the driver, or writes itself ----------------------------------
    case(
        "smc-writable_text_section",
        reference() + '\t.section .text.smc,"awx",@progbits\nsmc:\tret\n',
        REJECTED,
        "forbidden_section",
    ),
    case(
        "smc-patch_own_code",
        at_entry("\tleaq add_scaled(%rip), %rax\n\tmovb $0xc3, (%rax)\n"),
        RUNTIME,
        "crash",
    ),
    case(
        "constructor-init_array",
        reference() + '\t.section .init_array,"aw"\n\t.quad add_scaled\n',
        REJECTED,
        "forbidden_section",
        # past the static rule, the link drops the section: the function is just the task's
        {Status.PASS},
    ),
    case(
        "constructor-ifunc",
        reference().replace("@function", "@gnu_indirect_function", 1),
        REJECTED,
        "forbidden_section",
    ),
    case(
        "state-writable_data",
        reference() + "\t.data\ncounter:\t.quad 0\n",
        REJECTED,
        "writable_state",
    ),
    # --- the measurement ------------------------------------------------------------------
    case(
        "valgrind-zero_stats",
        reference().replace("\tret\n", CLIENT_REQUEST.format(request=ZERO_STATS) + "\tret\n"),
        REJECTED,
        "forbidden_instruction",
    ),
    case(
        "valgrind-toggle_collect",
        at_entry(CLIENT_REQUEST.format(request=TOGGLE_COLLECT)),
        REJECTED,
        "forbidden_instruction",
    ),
    case("timer-rdtsc", at_entry("\trdtsc\n"), REJECTED, "forbidden_instruction"),
    # the counter's bytes in a mov's immediate (b9 0f 31 90 00), jumped into: objdump's
    # linear sweep decodes a mov; at run time the counter is off and it faults
    case(
        "timer-rdtsc_hidden_in_immediate",
        at_entry("\tjmp 2f+1\n2:\tmovl $0x90310f, %ecx\n"),
        REJECTED,
        "forbidden_instruction",
    ),
    case(
        "timer-rdtscp_hidden_in_immediate",
        at_entry("\tjmp 2f+1\n2:\tmovl $0x90f9010f, %ecx\n"),
        REJECTED,
        "forbidden_instruction",
    ),
    # --- timing the candidate can warm up: each pass runs on a scrubbed stack of its own,
    # with the vector registers cleared and inputs no earlier pass saw; slow, not a pass
    case("warmup-memo_below_rsp", slow_or_memo(MEMO_BELOW_RSP), SLOW, "slow"),
    case("warmup-seen_inputs_in_xmm", slow_or_memo(SEEN_IN_XMM), SLOW, "slow"),
    # --- speed decided by noise: 1.0001x in instructions is under the 1.01x floor
    case("noise-one_instruction_fewer", noise_level(baseline_o3(), False), SLOW, "slow"),
    case("noise-one_fewer_realigned", noise_level(baseline_o3(), True), SLOW, "slow"),
    case(
        "driver-reference_its_symbols",
        at_entry("\tmovq $1, crucible_misaligned(%rip)\n"),
        {Status.COMPILE_ERROR},
        "undefined_symbol",
    ),
    case(
        "driver-call_libc_write",
        at_entry(
            "\tmovl $1, %edi\n\tleaq msg(%rip), %rsi\n\tmovl $3, %edx\n\tcall write\n",
            string("msg", "R 0"),
        ),
        {Status.COMPILE_ERROR},
        "api_not_allowed",
    ),
    # --- forgeries --------------------------------------------------------------------------
    syscall_case(
        "forge-driver_records_then_exit",
        "\tmovl $1, %edi\n\tleaq rec(%rip), %rsi\n\tmovl $20, %edx\n\tmovl $1, %eax\n\tsyscall\n"
        "\txorl %edi, %edi\n\tmovl $231, %eax\n\tsyscall\n",
        string("rec", "R 0 0 0 0 0 0 0\\nE 1\\n"),
        runtime_code="abnormal_exit",
    ),
    # the driver's own failure code, from candidate code: still the candidate's
    syscall_case(
        "forge-driver_bad_input_exit",
        "\tmovl $90, %edi\n\tmovl $231, %eax\n\tsyscall\n",
        runtime_code="abnormal_exit",
    ),
    # --- the ABI ------------------------------------------------------------------------------
    case("abi-clobber_rbx", at_entry("\tmovq $0, %rbx\n"), RUNTIME, "abi_violation"),
    case("abi-clobber_r15", at_entry("\tleaq 1(%rdi), %r15\n"), RUNTIME, "abi_violation"),
    case(
        "abi-direction_flag_left_set",
        reference().replace("\tret\n", "\tstd\n\tret\n"),
        RUNTIME,
        "abi_violation",
    ),
    case(
        "abi-mxcsr_flush_to_zero",
        at_entry(
            "\tsubq $8, %rsp\n\tstmxcsr (%rsp)\n\torl $0x8040, (%rsp)\n"
            "\tldmxcsr (%rsp)\n\taddq $8, %rsp\n"
        ),
        RUNTIME,
        "abi_violation",
    ),
    case("abi-write_callers_frame", at_entry("\tmovq $0, 16(%rsp)\n"), RUNTIME, "abi_violation"),
    # the x87 stack is empty at a return that is not a long double's (the next x87 code of
    # the caller overflows it)
    case("abi-x87_stack_left_full", at_entry("\tfld1\n\tfldz\n"), RUNTIME, "abi_violation"),
    case("abi-mmx_without_emms", at_entry("\tmovq %rdi, %mm0\n"), RUNTIME, "abi_violation"),
    # --- memory ------------------------------------------------------------------------------
    # where dst ends at an unmapped page the write faults there: the same finding
    case(
        "oob-write_past_the_end",
        at_entry("\tmovl $7, (%rdi,%rcx,4)\n"),
        WRONG,
        "out_of_bounds_write",
    ),
    # only at sizes past every size the cases had before (the task's range stops at 200;
    # the largest tested is twice the perf workload's 2048): the cases must reach them
    case(
        "oob-write_dst_n_when_large",
        at_entry(LARGE.format("\tmovl $7, (%rdi,%rcx,4)\n")),
        WRONG,
        "out_of_bounds_write",
    ),
    case(
        "oob-write_before_dst_when_large",
        at_entry(LARGE.format("\tmovl $7, -4(%rdi)\n")),
        WRONG,
        "out_of_bounds_write",
    ),
    # 400 bytes out: past the window's 64 bytes of fill, in the driver's red zone
    case(
        "oob-write_400_bytes_before_dst",
        at_entry("\tmovl $7, -400(%rdi)\n"),
        WRONG,
        "out_of_bounds_write",
    ),
    # 6000 bytes past src's end, but never where src ends at a page (the guard page would
    # fault): past the red zones, found by the driver's scan of the whole arena
    case(
        "oob-write_far_dodging_the_guard_page",
        at_entry(
            "\tleaq (%rsi,%rcx,4), %rax\n\ttestl $4095, %eax\n\tjz 7f\n\tcmpq $8, %rcx\n"
            "\tjbe 7f\n\tmovl $7, 6000(%rax)\n7:\n"
        ),
        WRONG,
        "out_of_bounds_write",
    ),
    # --- sizes the task's own ranges never reach --------------------------------------------
    # wrong (the last element skipped) only between two sizes, or above one: right on every
    # size up to 200 the task's ranges give and on the perf workload's 2048. A band a factor
    # 2^(2/4) wide holds a whole quarter octave of the size schedule, so one draw at least
    case(
        "sizes-wrong_from_400_to_32768",
        at_entry(BAND.format(lo=400, hi=32768)),
        WRONG,
        "output_mismatch",
    ),
    case(
        "sizes-wrong_from_1100_to_1600",
        at_entry(BAND.format(lo=1100, hi=1600)),
        WRONG,
        "output_mismatch",
    ),
    case(
        "oob-read_far_past_the_end",
        at_entry("\tmovl 8192(%rsi,%rcx,4), %eax\n"),
        RUNTIME,
        "crash",
    ),
    # --- the instruction set ------------------------------------------------------------------
    case(
        "isa-avx512_mnemonic",
        at_entry("\tvpxord %zmm0, %zmm0, %zmm0\n"),
        {Status.COMPILE_ERROR},
        "isa_not_allowed",
    ),
    case(
        "isa-avx512_as_bytes",
        at_entry("\t.byte 0x62, 0xf1, 0x7d, 0x48, 0xef, 0xc0\n"),
        {Status.COMPILE_ERROR},
        "isa_not_allowed",
    ),
    # --- the host's files through the assembler ----------------------------------------------
    case(
        "host-incbin_secret",
        reference() + '\t.section .rodata\nsecret:\t.incbin "{SECRET_HOME}"\n',
        {Status.COMPILE_ERROR},
    ),
)
