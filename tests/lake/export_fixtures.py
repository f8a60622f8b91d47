"""A small hand-built lake for the export tests, from real RTL catalog tasks.

Three train tasks (adder8 level 1, alu8 level 2, sync_fifo8 level 3) and one holdout task
(cmp8_mode). Each candidate is labelled; `Scenario` says which labels are keepers,
contaminated, compiled failures, and which verdicts are infra errors, so tests check the
export against what was put in rather than against what the SQL says.

Dedup rows are written by hand (not by `lake.dedup`) so that the keeper flags are exactly
the ones the tests expect.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lake.schema import Trajectory, Turn, to_timestamp
from lake.store import Lake
from lake.writer import BatchWriter
from verifiers import domain as domains
from verifiers.catalog import load_catalog
from verifiers.contract import Candidate, Check, Task, Verdict, content_id

if TYPE_CHECKING:
    from lake.export import ExportResult

CATALOG = Path(__file__).resolve().parents[2] / "tasks"
TOOLCHAIN = {"iverilog": "12.0", "yosys": "0.38"}
T0 = "2025-01-01T00:00:00.000+00:00"
T1 = "2025-01-02T00:00:00.000+00:00"
T2 = "2025-01-03T00:00:00.000+00:00"

ADDER_REWRITE = """module adder8 (
    input  wire [7:0] a,
    input  wire [7:0] b,
    input  wire       cin,
    output wire [7:0] sum,
    output wire       cout
);
    wire [8:0] c;
    assign c[0] = cin;
    genvar i;
    generate
        for (i = 0; i < 8; i = i + 1) begin : fa
            assign sum[i]   = a[i] ^ b[i] ^ c[i];
            assign c[i + 1] = (a[i] & b[i]) | (c[i] & (a[i] ^ b[i]));
        end
    endgenerate
    assign cout = c[8];
endmodule
"""

# Passing adder8 code that must never be a subject (infra-only, contaminated, no dedup row).
ADDER_LOOKAHEAD = """module adder8 (input wire [7:0] a, input wire [7:0] b, input wire cin,
                output wire [7:0] sum, output wire cout);
    wire [7:0] g = a & b;
    wire [7:0] p = a ^ b;
    reg  [8:0] c;
    integer k;
    always @(*) begin
        c[0] = cin;
        for (k = 0; k < 8; k = k + 1) c[k + 1] = g[k] | (p[k] & c[k]);
    end
    assign sum  = p ^ c[7:0];
    assign cout = c[8];
endmodule
"""
ADDER_WIDE = """module adder8 (input wire [7:0] a, input wire [7:0] b, input wire cin,
                output wire [7:0] sum, output wire cout);
    wire [15:0] wide = {8'd0, a} + {8'd0, b} + {15'd0, cin};
    assign sum = wide[7:0];
    assign cout = wide[8];
endmodule
"""
ADDER_SPLIT = """module adder8 (input wire [7:0] a, input wire [7:0] b, input wire cin,
                output wire [7:0] sum, output wire cout);
    wire [4:0] lo = {1'b0, a[3:0]} + {1'b0, b[3:0]} + {4'd0, cin};
    wire [4:0] hi = {1'b0, a[7:4]} + {1'b0, b[7:4]} + {4'd0, lo[4]};
    assign sum = {hi[3:0], lo[3:0]};
    assign cout = hi[4];
endmodule
"""


@dataclass
class Scenario:
    lake: Lake
    tasks: dict[str, Task]
    ids: dict[str, str] = field(default_factory=dict)  # label -> candidate_id
    code: dict[str, str] = field(default_factory=dict)  # candidate_id -> code
    keepers: set[str] = field(default_factory=set)  # candidate ids, latest dedup row
    contaminated: set[str] = field(default_factory=set)
    compiled_failures: set[str] = field(default_factory=set)  # latest verdict
    failures: set[str] = field(default_factory=set)  # latest verdict not pass
    infra_verdicts: set[str] = field(default_factory=set)
    trajectories: dict[str, str] = field(default_factory=dict)  # label -> trajectory_id
    verdicts: dict[str, str] = field(default_factory=dict)  # label -> its (first) verdict id
    status: dict[str, str] = field(default_factory=dict)  # label -> latest non-infra status

    def label(self, candidate_id: str) -> str:
        return {v: k for k, v in self.ids.items()}[candidate_id]


def catalog_tasks() -> dict[str, Task]:
    names = ("adder8", "alu8", "sync_fifo8", "cmp8_mode")
    tasks, errors = load_catalog(CATALOG, ("rtl",), names)
    assert not errors, errors
    by_name = {t.name: t for t in tasks}
    assert by_name["cmp8_mode"].split == "holdout"
    assert all(by_name[n].split == "train" for n in names[:3])
    return by_name


def mutate(code: str, old: str, new: str) -> str:
    assert old in code, f"{old!r} not in the reference"
    return code.replace(old, new, 1)


def _check(name: str, ok: bool, seconds: float, detail: str = "") -> Check:
    # the stage a verifier records: its domain's descriptor's
    return Check(name, ok, seconds, detail, domains.get("rtl").stage_of(name))


def checks(status: str) -> tuple[Check, ...]:
    if status == "pass":
        return (
            _check("compile", True, 0.1),
            _check("simulate", True, 0.2),
            _check("synthesize", True, 0.3),
        )
    if status == "compile_error":
        return (_check("compile", False, 0.1, "syntax error"),)
    if status == "infra_error":
        return ()
    return (_check("compile", True, 0.1), _check("simulate", False, 0.2, status))


def build(root: Path, *, hand_dedup: bool = True, offline_labels: bool = False) -> Scenario:
    """The scenario's lake; `hand_dedup=False` leaves the dedup table empty (for a test
    that runs the real dedup pass); `offline_labels` names the generators the way the
    offline channel does (`catalog:reference`, `rewrite:...`, `perturb:...`, repairs by
    reconstruction) instead of `test:<origin>`."""
    lake = Lake(root)
    tasks = catalog_tasks()
    s = Scenario(lake, tasks)
    adder, alu, fifo, cmp = (tasks[n] for n in ("adder8", "alu8", "sync_fifo8", "cmp8_mode"))
    assert adder.reference and alu.reference and fifo.reference and cmp.reference

    with BatchWriter(lake, run_id="fixture") as w:
        for task in tasks.values():
            w.add_task(task)

        def cand(label: str, task: Task, code: str, origin: str, parent: str = "") -> str:
            c = Candidate(
                task_id=task.task_id,
                code=code,
                origin=origin,
                generator=_generator(origin, offline_labels),
                parent_id=s.ids.get(parent),
                created_at=T0,
            )
            w.add_candidate(c, task.domain)
            s.ids[label] = c.candidate_id
            s.code[c.candidate_id] = code
            return c.candidate_id

        def verdict(
            label: str, task: Task, status: str, area: float | None = None, at: str = T0
        ) -> str:
            cid = s.ids[label]
            metrics = {"cells": int(area // 5), "area": area} if area is not None else {}
            v = Verdict(
                candidate_id=cid,
                task_id=task.task_id,
                domain=task.domain,
                verifier="rtl",
                verifier_version="1",
                status=status,
                checks=checks(status),
                metrics=metrics,
                feedback="" if status == "pass" else f"{label}: {status} at t=40ns, y=3 not 4",
                category={"wrong_answer": "functional", "compile_error": "syntax"}.get(status, ""),
                toolchain=TOOLCHAIN,
                created_at=at,
            )
            w.add_verdict(v)
            s.verdicts.setdefault(label, v.verdict_id)
            if status == "infra_error":
                s.infra_verdicts.add(v.verdict_id)
                s.status.setdefault(label, status)
            else:
                s.status[label] = status
            return v.verdict_id

        # adder8: two distinct passing keepers (optimize pair: area 100 -> 60), a near-dup
        # non-keeper, functional failures (two near copies of each other), a timeout, a
        # compile error, and passing code that is never a subject.
        cand("adder_ref", adder, adder.reference, "reference")
        cand("adder_rewrite", adder, ADDER_REWRITE, "rewrite")
        cand(
            "adder_neardup",
            adder,
            mutate(adder.reference, "{8'd0, cin}", "{8'h00, cin}"),
            "rewrite",
        )
        cand(
            "adder_wa1", adder, mutate(adder.reference, "+ {8'd0, cin}", "- {8'd0, cin}"), "perturb"
        )
        cand(
            "adder_wa2", adder, mutate(adder.reference, "+ {8'd0, cin}", "| {8'd0, cin}"), "perturb"
        )
        cand(
            "adder_wa_contam",
            adder,
            mutate(adder.reference, "{1'b0, a} +", "{1'b0, a} ^"),
            "perturb",
        )
        cand("adder_timeout", adder, mutate(adder.reference, "{1'b0, b}", "{1'b1, b}"), "perturb")
        cand("adder_ce", adder, mutate(adder.reference, "cin};", "cin}"), "perturb")
        cand("adder_ce2", adder, mutate(adder.reference, "endmodule", "endmodul"), "llm")
        cand("adder_infra", adder, ADDER_LOOKAHEAD, "llm")
        cand("adder_contam", adder, ADDER_WIDE, "llm")
        cand("adder_nodedup", adder, ADDER_SPLIT, "llm")
        cand("adder_infra_fail", adder, mutate(adder.reference, "cout", "cout "), "llm")
        verdict("adder_ref", adder, "pass", 100.0)
        verdict("adder_rewrite", adder, "pass", 60.0)
        verdict("adder_neardup", adder, "pass", 90.0)
        verdict("adder_wa1", adder, "wrong_answer")
        verdict("adder_wa2", adder, "wrong_answer")
        verdict("adder_wa_contam", adder, "wrong_answer")
        verdict("adder_timeout", adder, "timeout")
        verdict("adder_ce", adder, "compile_error")
        verdict("adder_ce2", adder, "compile_error")
        verdict("adder_infra", adder, "infra_error")
        verdict("adder_contam", adder, "pass", 70.0)
        verdict("adder_nodedup", adder, "pass", 80.0)
        verdict("adder_infra_fail", adder, "infra_error")

        # alu8: one keeper (re-verified later with an infra error: still a pass), a
        # candidate that was a keeper and no longer is, a functional failure, and a repair
        # whose fix is a near-dup non-keeper.
        cand("alu_ref", alu, alu.reference, "reference")
        cand(
            "alu_demoted",
            alu,
            mutate(alu.reference, "3'b010: y = a & b;", "3'b010: y = b & a;"),
            "rewrite",
        )
        cand("alu_wa", alu, mutate(alu.reference, "y = a | b;", "y = a & b;"), "perturb")
        cand("alu_fix", alu, mutate(alu.reference, "y = a ^ b;", "y = b ^ a;"), "repair", "alu_wa")
        verdict("alu_ref", alu, "pass", 300.0)
        s.infra_verdicts.add(_infra_reverify(w, s.ids["alu_ref"], alu))
        verdict("alu_demoted", alu, "pass", 310.0)
        alu_wa_v = verdict("alu_wa", alu, "wrong_answer")
        alu_fix_v = verdict("alu_fix", alu, "pass", 300.0)

        # sync_fifo8: one keeper and only failures that did not compile.
        cand("fifo_ref", fifo, fifo.reference, "reference")
        cand(
            "fifo_ce1",
            fifo,
            mutate(fifo.reference, "reg [2:0] wp, rp;", "reg [2:0] wp, rp"),
            "perturb",
        )
        cand(
            "fifo_ce2", fifo, mutate(fifo.reference, "endmodule", "endmodul"), "repair", "fifo_ce1"
        )
        fifo_ref_v = verdict("fifo_ref", fifo, "pass", 900.0)
        fifo_ce1_v = verdict("fifo_ce1", fifo, "compile_error")
        fifo_ce2_v = verdict("fifo_ce2", fifo, "compile_error")

        # cmp8_mode (holdout): everything would qualify but the split.
        cand("cmp_ref", cmp, cmp.reference, "reference")
        cand(
            "cmp_wa",
            cmp,
            mutate(cmp.reference, "assign eq = (a == b);", "assign eq = (a != b);"),
            "perturb",
        )
        cmp_ref_v = verdict("cmp_ref", cmp, "pass", 200.0)
        cmp_wa_v = verdict("cmp_wa", cmp, "wrong_answer")

        # Trajectories. The adder8 ones open with near copies of each other: one survives.
        adder_ref_v, ce_v, infra_v = (
            s.verdicts[k] for k in ("adder_ref", "adder_ce", "adder_infra_fail")
        )
        wa1_v, wa2_v = s.verdicts["adder_wa1"], s.verdicts["adder_wa2"]
        plans = {
            "adder_short": (adder, [("adder_wa1", wa1_v), ("adder_ref", adder_ref_v)]),
            "adder_long": (
                adder,
                [("adder_wa2", wa2_v), ("adder_ce", ce_v), ("adder_ref", adder_ref_v)],
            ),
            "adder_infra": (adder, [("adder_infra_fail", infra_v), ("adder_ref", adder_ref_v)]),
            "alu_nonkeeper_fix": (alu, [("alu_wa", alu_wa_v), ("alu_fix", alu_fix_v)]),
            "fifo": (
                fifo,
                [("fifo_ce1", fifo_ce1_v), ("fifo_ce2", fifo_ce2_v), ("fifo_ref", fifo_ref_v)],
            ),
            "cmp_holdout": (cmp, [("cmp_wa", cmp_wa_v), ("cmp_ref", cmp_ref_v)]),
        }
        for label, (task, turns) in plans.items():
            statuses = ["pass" if i == len(turns) - 1 else "fail" for i in range(len(turns))]
            traj = Trajectory(
                task_id=task.task_id,
                domain=task.domain,
                turns=tuple(
                    Turn(s.ids[cl], vid, st) for (cl, vid), st in zip(turns, statuses, strict=True)
                ),
                outcome="pass",
                run_id="fixture",
                created_at=T1,
            )
            w.add_trajectory(traj)
            s.trajectories[label] = traj.trajectory_id

        if hand_dedup:
            _hand_dedup(w, s)

    for label, cid in s.ids.items():
        if s.status[label] not in ("pass", "infra_error"):
            s.failures.add(cid)
            if s.status[label] != "compile_error":
                s.compiled_failures.add(cid)
    return s


def _generator(origin: str, offline: bool) -> str:
    if not offline or origin == "llm":
        return f"test:{origin}"
    from generators.perturb.repair import ReconstructRepair

    return {
        "reference": "catalog:reference",
        "repair": f"{ReconstructRepair.name}:fixture",
    }.get(origin, f"{origin}:fixture")


def _hand_dedup(w: BatchWriter, s: Scenario) -> None:
    # Dedup: an old pass, then the current one (latest_dedup reads the newest row).
    old = {"adder_rewrite": False, "alu_demoted": True}
    for label, keeper in old.items():
        w.add("dedup", [_dedup_row(s, label, keeper=keeper, contaminated=False, at=T0)])
    current_keepers = {
        "adder_ref",
        "adder_rewrite",
        "adder_infra",
        "adder_contam",
        "alu_ref",
        "fifo_ref",
        "cmp_ref",
    }
    contaminated = {"adder_contam", "adder_wa_contam"}
    for label, cid in s.ids.items():
        if label == "adder_nodedup":
            continue
        keeper = label in current_keepers
        w.add(
            "dedup",
            [_dedup_row(s, label, keeper=keeper, contaminated=label in contaminated, at=T2)],
        )
        if keeper and label not in contaminated:
            s.keepers.add(cid)
        if label in contaminated:
            s.contaminated.add(cid)


def _infra_reverify(w: BatchWriter, candidate_id: str, task: Task) -> str:
    v = Verdict(
        candidate_id=candidate_id,
        task_id=task.task_id,
        domain=task.domain,
        verifier="rtl",
        verifier_version="2",
        status="infra_error",
        feedback="yosys crashed",
        category="infra",
        toolchain=TOOLCHAIN,
        created_at=T2,
    )
    w.add_verdict(v)
    return v.verdict_id


def _dedup_row(s: Scenario, label: str, *, keeper: bool, contaminated: bool, at: str) -> dict:
    cid = s.ids[label]
    task = next(t for t in s.tasks.values() if label.startswith(_PREFIX[t.name]))
    cluster = cid if keeper else s.ids[_PREFIX[task.name] + "ref"]
    return {
        "dedup_id": content_id(cid, cluster, str(keeper), str(contaminated), at),
        "candidate_id": cid,
        "task_id": task.task_id,
        "domain": task.domain,
        "exact_key": content_id(s.code[cid]),
        "cluster_id": cluster,
        "cluster_size": 1 if keeper else 2,
        "keeper": keeper,
        "contaminated": contaminated,
        "contamination": "overlaps holdout cmp8_mode" if contaminated else None,
        "params": '{"threshold":0.7}',
        "run_id": "dedup-fixture",
        "created_at": to_timestamp(at),
    }


_PREFIX = {"adder8": "adder_", "alu8": "alu_", "sync_fifo8": "fifo_", "cmp8_mode": "cmp_"}


def run_export(s: Scenario, out: Path, **kw: Any) -> ExportResult:
    """An export of the scenario's lake into `out`, as the export stage makes one."""
    from lake import db
    from lake.export import ExportSettings, export

    con = db.connect(s.lake)
    try:
        return export(s.lake, con, ExportSettings(out=out, **kw), run_id="test-run")
    finally:
        con.close()


# --- a lake of several domains, for the mix ---------------------------------------------

# one train task of each (catalog name, its level): only their passing keepers are written
MIXED_TASKS = {"rtl": "adder8", "cad": "washer", "embedded": "bits_field_ops"}


def build_domains(root: Path, passing: dict[str, int]) -> Lake:
    """A lake whose only exportable rows are `passing[domain]` distinct passing dedup
    keepers (sft_direct rows) of one train task per domain (`MIXED_TASKS`)."""
    lake = Lake(root)
    with BatchWriter(lake, run_id="fixture") as w:
        for domain, n in passing.items():
            tasks, errors = load_catalog(CATALOG, (domain,), (MIXED_TASKS[domain],))
            assert not errors and len(tasks) == 1, errors
            (task,) = tasks
            assert task.reference and task.split == "train"
            w.add_task(task)
            desc = domains.get(domain)
            gate, stage = desc.gates[0]
            for i in range(n):
                # distinct code, each its own keeper (the dedup rows are written by hand)
                code = f"{task.reference}\n{_comment(desc.syntax)} variant {i}\n"
                c = Candidate(
                    task_id=task.task_id,
                    code=code,
                    origin="reference" if i == 0 else "rewrite",
                    generator="test:mix",
                    created_at=T0,
                )
                w.add_candidate(c, domain)
                w.add_verdict(
                    Verdict(
                        candidate_id=c.candidate_id,
                        task_id=task.task_id,
                        domain=domain,
                        verifier=domain,
                        verifier_version="1",
                        status="pass",
                        checks=(Check(gate, True, 0.1, "", stage),),
                        created_at=T0,
                    )
                )
                w.add(
                    "dedup",
                    [
                        {
                            "dedup_id": content_id(c.candidate_id, "keeper"),
                            "candidate_id": c.candidate_id,
                            "task_id": task.task_id,
                            "domain": domain,
                            "exact_key": content_id(code),
                            "cluster_id": c.candidate_id,
                            "cluster_size": 1,
                            "keeper": True,
                            "contaminated": False,
                            "contamination": None,
                            "params": '{"threshold":0.7}',
                            "run_id": "dedup-fixture",
                            "created_at": to_timestamp(T2),
                        }
                    ],
                )
    return lake


def _comment(syntax: str) -> str:
    return {"python": "#", "asm": ";"}.get(syntax, "//")
