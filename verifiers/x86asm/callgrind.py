"""Instruction counts from valgrind's callgrind: deterministic for the same binary, input
and machine, whatever else the machine does.

The driver runs the measured calls inside one function (`crucible_count_region`, or
`crucible_program_region` for a program) and callgrind collects only while it is on the
stack (`--toggle-collect`). The candidate's own symbols are all renamed `cand.*`, so no
function of it can be that region. The count is read from callgrind's output file, which
the host creates empty before the run and valgrind truncates and writes when the process
ends (whatever the measured code wrote there is gone by then); the file must also show
every call the driver made to the candidate's entry: a run that ended early, or whose
collection was switched off or zeroed, shows fewer, and is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

from verifiers.sandbox import RunResult
from verifiers.warm import OutputRefused, read_beneath

OUT = "cg.out"
MAX_OUT = 16 * 2**20
FUNCTION_REGION = "crucible_count_region"
PROGRAM_REGION = "crucible_program_region"
TRAMPOLINE = "crucible_call"
_TOTALS = re.compile(r"^(?:totals|summary):\s+(\d+)\s*$", re.M)


def argv(region: str, binary: str, *args: str) -> list[str]:
    """valgrind's command line: `binary args` counted while `region` is on the stack."""
    return [
        "valgrind",
        "--tool=callgrind",
        "--vgdb=no",
        f"--callgrind-out-file={OUT}",
        f"--toggle-collect={region}",
        "--compress-strings=no",
        "--compress-pos=no",
        "--dump-line=no",
        "--dump-instr=no",
        "--separate-threads=no",
        "--trace-children=no",
        binary,
        *args,
    ]


class CountRefused(ValueError):
    """callgrind counted, but not every call the driver made: the measured code ran
    differently under the instrumentation (it ended early, or zeroed or paused the
    count). The candidate's doing: valgrind has no failure that looks like this."""


def read(work: Path, res: RunResult, region: str, entry: str, calls: int) -> int | str:
    """The instructions the region executed, or why valgrind gave no count (a string).
    Raises CountRefused for a count that does not cover every call."""
    try:
        text = read_beneath(work, work / OUT, MAX_OUT).decode("utf-8", "replace")
    except (OutputRefused, OSError) as e:
        return f"callgrind left no output ({e}); valgrind said: {res.stderr[-400:]}"
    totals = _TOTALS.findall(text)
    if not totals:
        return f"callgrind's output has no totals; valgrind said: {res.stderr[-400:]}"
    seen = calls_to(text, TRAMPOLINE, entry)
    if seen != calls:
        raise CountRefused(
            f"callgrind saw {seen} calls of {entry.removeprefix('cand.')} where the driver "
            f"makes {calls}: the measured run did not run whole under the instrumentation"
        )
    return int(totals[-1])


def calls_to(text: str, caller: str, callee: str) -> int:
    """How many calls callgrind recorded from `caller` to `callee` (uncompressed names)."""
    total, current, target = 0, "", ""
    for line in text.splitlines():
        if line.startswith("fn="):
            current = line[3:].strip()
        elif line.startswith("cfn="):
            target = line[4:].strip()
        elif line.startswith("calls=") and current == caller and target == callee:
            total += int(line[6:].split()[0])
    return total
