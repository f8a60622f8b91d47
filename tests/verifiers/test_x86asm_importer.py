"""The SuperCoder-layout importer and whole-program tasks: dataset rows (the Hugging Face
layout) and the TopCode/TopIO directory layout are read from fixtures written here; a
problem without tests is skipped with its reason; the imported program's -O3 baseline
passes its own tests; a faster program passes, a copy of the baseline or of the given
assembly is copied_input, a wrong output and a forbidden library call fail."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.adversarial.x86asm.verifiers import needs_x86
from verifiers.catalog import load_task
from verifiers.contract import Status
from verifiers.specfields import ImportProblems
from verifiers.x86asm.supercoder import import_supercoder, read_problems
from verifiers.x86asm.verifier import X86Verifier

ROWS = Path(__file__).resolve().parents[1] / "fixtures" / "supercoder" / "rows.jsonl"
pytestmark = needs_x86
# the primes program of the fixture, with the trial division stopped at the square root
FAST_PRIMES = r"""#include <stdio.h>
int main(void) {
    int n;
    if (scanf("%d", &n) != 1)
        return 1;
    int count = 0;
    for (int k = 2; k <= n; k++) {
        int prime = 1;
        for (int d = 2; d * d <= k; d++)
            if (k % d == 0) { prime = 0; break; }
        count += prime;
    }
    printf("%d\n", count);
    return 0;
}
"""


def _asm(c_text: str, tmp: Path) -> str:
    (tmp / "p.c").write_text(c_text)
    subprocess.run(
        ["gcc", "-O3", "-S", "-fno-asynchronous-unwind-tables", "p.c", "-o", "p.s"],
        cwd=tmp,
        check=True,
    )
    return (tmp / "p.s").read_text()


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    dest = tmp_path_factory.mktemp("imported") / "x86asm"
    with pytest.raises(ImportProblems) as e:
        import_supercoder(ROWS, dest)
    return dest, e.value


def test_rows_import_and_the_bad_one_is_skipped_with_its_reason(imported):
    dest, problems = imported
    assert sorted(p.name for p in problems.imported) == ["supercoder_rows_7", "supercoder_rows_9"]
    assert len(problems.errors) == 1 and "no test cases" in problems.errors[0]
    t = load_task(dest / "supercoder_rows_7", "x86asm")
    assert t.split == "holdout" and t.source == "supercoder" and t.reference is None
    assert t.interface["kind"] == "program" and len(t.harness["tests"]) == 4
    assert t.harness["baselines"]["given"].strip().startswith(".text")  # the fence removed
    assert t.harness["tests"][t.harness["perf_test"]]["stdin"] == "4000\n"  # the longest


def test_the_source_layout_reads_the_same(tmp_path):
    row = json.loads(ROWS.read_text().splitlines()[1])["extra_info"]
    (tmp_path / "TopCode").mkdir()
    (tmp_path / "TopCode" / "p01.c").write_text(row["c_code"])
    io = tmp_path / "TopIO" / "p01"
    io.mkdir(parents=True)
    for k, (i, o) in enumerate(zip(row["inputs"], row["outputs"], strict=True)):
        (io / f"input.{k}.txt").write_text(i)
        (io / f"output.{k}.txt").write_text(o)
    (tmp_path / "TopCode" / "p02.c").write_text("int main(void){return 0;}\n")  # no tests
    got = dict(read_problems(tmp_path))
    assert [t["stdin"] for t in got["p01"]["tests"]] == row["inputs"]
    assert isinstance(got["p02"], ValueError)


def test_whole_programs_are_judged_on_output_abi_and_speed(imported, tmp_path):
    dest, _ = imported
    task = load_task(dest / "supercoder_rows_7", "x86asm")
    v = X86Verifier()
    fast = _asm(FAST_PRIMES, tmp_path)
    ok = v.verify(task, fast)
    assert ok.status is Status.PASS, ok.feedback
    assert ok.metrics["speedup"] > 2 and ok.metrics["speedup_wall"] > 1

    copy = v.verify(task, task.harness["baselines"]["O3"])
    assert (copy.status, copy.code) == (Status.SLOW, "copied_input")

    off_by_one = FAST_PRIMES.replace(", count)", ", count + 1)")
    assert off_by_one != FAST_PRIMES
    wrong = v.verify(task, _asm(off_by_one, tmp_path))
    assert (wrong.status, wrong.code) == (Status.WRONG_ANSWER, "output_mismatch"), wrong.feedback

    clobber = v.verify(task, fast.replace("main:\n", "main:\n\tmovq $1, %r12\n", 1))
    assert (clobber.status, clobber.code) == (Status.RUNTIME_ERROR, "abi_violation")

    system = v.verify(task, fast.replace("\tcall\tprintf", "\tcall\tsystem", 1))
    assert (system.status, system.code) == (Status.COMPILE_ERROR, "api_not_allowed")


def test_a_program_that_prints_the_wrong_thing_names_the_test(imported, tmp_path):
    dest, _ = imported
    task = load_task(dest / "supercoder_rows_9", "x86asm")
    # reversing nothing: every line printed as read
    echo = _asm(
        "#include <stdio.h>\nint main(void){char l[1024];"
        "while (fgets(l, sizeof l, stdin)) fputs(l, stdout); return 0;}\n",
        tmp_path,
    )
    v = X86Verifier().verify(task, echo)
    assert (v.status, v.code) == (Status.WRONG_ANSWER, "output_mismatch"), v.feedback
    assert "test 0" in v.feedback and "'abc'" in v.feedback and "'cba'" in v.feedback


def test_a_program_that_runs_otherwise_under_the_count_is_refused(imported, tmp_path):
    """Past the static rules (which refuse valgrind's client requests), a program that asks
    whether it runs under valgrind and then skips its work: its count would be near zero.
    main is entered once either way; its output under the count differs from the native
    runs', so the count is refused as the candidate's."""
    from tests.adversarial.x86asm.verifiers import NoStaticRules

    dest, _ = imported
    task = load_task(dest / "supercoder_rows_7", "x86asm")
    cheat = FAST_PRIMES.replace(
        "#include <stdio.h>", "#include <stdio.h>\n#include <valgrind/valgrind.h>"
    ).replace("int count = 0;", "int count = 0;\n    if (RUNNING_ON_VALGRIND) return 0;")
    v = NoStaticRules().verify(task, _asm(cheat, tmp_path))
    assert (v.status, v.code) == (Status.REJECTED, "timing_games"), v.feedback


# --- whole programs get what their C baseline gets (#29) ------------------------------------
GLIBC_ROWS = ROWS.with_name("glibc_rows.jsonl")
SIEVE = r"""#include <stdio.h>

char composite[100001];

int main(void) {
    int n;
    if (scanf("%d", &n) != 1)
        return 1;
    int count = 0;
    for (int k = 2; k <= n; k++) {
        if (composite[k])
            continue;
        count++;
        for (long long m = (long long)k * k; m <= n; m += k)
            composite[m] = 1;
    }
    printf("%d\n", count);
    return 0;
}
"""
QSORT = r"""#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *x, const void *y) {
    int p = *(const int *)x, q = *(const int *)y;
    return (p > q) - (p < q);
}

int main(void) {
    int n;
    if (scanf("%d", &n) != 1)
        return 1;
    int *a = malloc(n * sizeof *a);
    for (int i = 0; i < n; i++)
        scanf("%d", &a[i]);
    qsort(a, n, sizeof a[0], cmp);
    long long s = 0;
    for (int i = 0; i < n; i++)
        s += (long long)a[i] * (i % 7 + 1);
    printf("%lld\n", s);
    return 0;
}
"""
GETCHAR = r"""#include <stdio.h>

static int read_int(void) {
    int c = getchar_unlocked(), neg = 0, x = 0;
    while (c == ' ' || c == '\n')
        c = getchar_unlocked();
    if (c == '-') {
        neg = 1;
        c = getchar_unlocked();
    }
    while (c >= '0' && c <= '9') {
        x = x * 10 + (c - '0');
        c = getchar_unlocked();
    }
    return neg ? -x : x;
}

int main(void) {
    int n = read_int();
    long long s = 0;
    for (int i = 0; i < n; i++)
        s += read_int();
    printf("%lld\n", s);
    return 0;
}
"""
# (the faster program, and the edit that makes it wrong as a model would): a global array
# in .bss (the sieve; its bound), qsort over 6000 ints (glibc asks sysinfo; the comparator's
# order), getchar_unlocked (glibc's __uflow; the sign dropped)
GLIBC_PROGRAMS = {
    "bss": (SIEVE, "m <= n; m += k", "m < n; m += k"),
    "qsort": (QSORT, "(p > q) - (p < q)", "(p < q) - (p > q)"),
    "getchar": (GETCHAR, "return neg ? -x : x;", "return x;"),
}


@pytest.fixture(scope="module")
def glibc_imported(tmp_path_factory):
    dest = tmp_path_factory.mktemp("glibc") / "x86asm"
    with pytest.raises(ImportProblems) as e:
        import_supercoder(GLIBC_ROWS, dest)
    return dest, e.value


def test_an_import_skip_says_why_in_words(glibc_imported):
    """The program that opens a file is skipped with the system call named, not `exit 159`
    (its baseline dies of the harness's SIGSYS)."""
    _, problems = glibc_imported
    assert len(problems.errors) == 1, problems.errors
    why = problems.errors[0]
    assert "fopen" in why and "openat (257) is not allowed" in why and "seccomp" in why, why
    assert "exit 159" not in why


@pytest.mark.parametrize("name", list(GLIBC_PROGRAMS))
def test_whole_programs_get_what_their_c_baseline_gets(glibc_imported, tmp_path, name):
    """gcc -O3 of a faster program passes though it keeps a global array in .bss (a program
    is a fresh process every run: the writable-state rule is a function's), calls qsort on
    6000 ints (glibc's sysinfo inside it) or reads with getchar_unlocked (glibc's __uflow);
    the same program made wrong fails on its output. Before: writable_state,
    forbidden_syscall, undefined_symbol."""
    dest, _ = glibc_imported
    task = load_task(dest / f"supercoder_glibc_rows_{name}", "x86asm")
    good, right, wrong = GLIBC_PROGRAMS[name]
    v = X86Verifier(timing_reps=6)  # 2x to 20x faster: fewer rounds resolve it (~3 s less)
    ok = v.verify(task, _asm(good, tmp_path))
    assert ok.status is Status.PASS, (ok.code, ok.feedback[:600])
    assert ok.metrics["speedup"] > 1 and ok.metrics["speedup_wall"] > 1
    assert right in good
    bad = v.verify(task, _asm(good.replace(right, wrong), tmp_path))
    assert (bad.status, bad.code) == (Status.WRONG_ANSWER, "output_mismatch"), bad.feedback
