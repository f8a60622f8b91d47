"""What a simulation said: the testbench's report lines, and a VCD cut to the window that
matters for a repair (the first mismatch), so a long run still leaves a small artifact."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

_MISMATCH = re.compile(
    r"MISMATCH\s+time=(?P<time>\S+)\s+output=(?P<output>\S+)\s+expected=(?P<expected>\S+)"
    r"\s+got=(?P<got>\S+)(?:\s+inputs:\s*(?P<inputs>.*))?"
)
_SUMMARY = re.compile(r"Mismatches:\s*(?P<n>\d+)\s+in\s+(?P<m>\d+)\s+samples")
_HINT = re.compile(
    r"Hint:\s*Output '(?P<output>[^']+)' has (?P<n>\d+) mismatch\w*\."
    r"(?:.*?time\s+(?P<time>\d+))?"
)


@dataclass
class Report:
    """The nonce-carrying lines of one run; lines without the nonce are the candidate's."""

    mismatches: int | None = None  # None: the testbench never reported
    samples: int = 0
    rows: list[dict[str, str]] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    first_time: int | None = None

    def table(self, limit: int = 5) -> str:
        if not self.rows:
            return "\n".join(self.hints)
        head = ("time", "output", "expected", "got", "inputs")
        text = format_table(head, [[r.get(h, "") for h in head] for r in self.rows[:limit]])
        if len(self.rows) > limit:
            text += f"\n... {len(self.rows) - limit} more mismatch line(s)"
        return text


def format_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(str(r[i])) for r in rows)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*map(str, r)) for r in rows]
    return "\n".join(ln.rstrip() for ln in lines)


def parse_report(stdout: str, nonce: str) -> Report:
    rep = Report()
    for raw in stdout.splitlines():
        # anywhere in the line: the candidate may leave a partial line of its own in
        # front of the testbench's; only the testbench knows the nonce
        at = raw.find(nonce)
        if at < 0:
            continue
        line = raw[at + len(nonce) :].strip()
        if m := _SUMMARY.search(line):
            rep.mismatches, rep.samples = int(m["n"]), int(m["m"])
        elif m := _MISMATCH.search(line):
            row = {k: (v or "").strip() for k, v in m.groupdict().items()}
            rep.rows.append(row)
            if rep.first_time is None and row["time"].isdigit():
                rep.first_time = int(row["time"])
        elif m := _HINT.search(line):
            rep.hints.append(line)
            if m["time"] and (rep.first_time is None or int(m["time"]) < rep.first_time):
                rep.first_time = int(m["time"])
    return rep


# --- VCD ---------------------------------------------------------------------------------

_TIMESCALE_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "fs": 1e-15}
_TS = re.compile(r"(\d+)\s*(s|ms|us|ns|ps|fs)\b")


def timescale_seconds(text: str) -> float | None:
    """The unit of a `timescale directive (Verilog) or a $timescale section (VCD)."""
    m = re.search(r"`timescale\s+(\d+)\s*(s|ms|us|ns|ps|fs)\b", text) or (
        re.search(r"\$timescale\s+(\d+)\s*(s|ms|us|ns|ps|fs)\b", text)
    )
    return int(m[1]) * _TIMESCALE_UNITS[m[2]] if m else None


def trim_vcd(vcd: str, center: int | None, keep_steps: int = 40) -> str:
    """The VCD header, the value of every signal just before the window, and the value
    changes of `keep_steps` timesteps either side of `center` (in VCD time units)."""
    head_end = vcd.find("$enddefinitions")
    if head_end < 0:
        return vcd
    head_end = vcd.find("\n", head_end) + 1
    header, body = vcd[:head_end], vcd[head_end:].splitlines()
    stamps = [i for i, ln in enumerate(body) if ln.startswith("#")]
    if not stamps:
        return vcd
    times = [int(body[i][1:]) for i in stamps]
    pivot = len(times) - 1
    if center is not None:
        pivot = next((k for k, t in enumerate(times) if t >= center), len(times) - 1)
    lo, hi = max(0, pivot - keep_steps), min(len(stamps), pivot + keep_steps + 1)
    state: dict[str, str] = {}
    for ln in body[: stamps[lo]]:
        key = _vcd_id(ln)
        if key:
            state[key] = ln
    out = [header, f"#{times[lo]}", "$dumpvars", *state.values(), "$end"]
    end = stamps[hi] if hi < len(stamps) else len(body)
    out += body[stamps[lo] + 1 : end]
    return "\n".join(out) + "\n"


def _vcd_id(line: str) -> str | None:
    line = line.strip()
    if not line or line.startswith("$") or line.startswith("#"):
        return None
    if line[0] in "bBrR":
        parts = line.split()
        return parts[1] if len(parts) == 2 else None
    return line[1:] if line[0] in "01xXzZ" else None
