"""Training-data exports: SFT direct, SFT repair, SFT optimize and DPO, from the lake.

What may be exported is decided in SQL (`sql/export_*.sql`): a subject (the code a row
teaches) is a passing dedup keeper of a train task, never contaminated, never judged only by
an `infra_error`. Python builds the conversations with the same prompt builders an LLM
generator uses (`generators.prompts`), so a training prompt is exactly what a model is sent.

Layout (Hugging Face): `<out>/<name>/data/<kind>/train-00000-of-0000N.parquet`, the same
rows as `jsonl/<kind>.jsonl`, a `README.md` dataset card whose `configs:` make every kind a
config of `datasets.load_dataset` (with a schema table per config, the provenance of the
rows and `counts.png`, a chart of the counts), and `manifest.json` (settings, counts, shard
hashes, lake versions, verifier versions, the gates the passes ran, SQL hashes, warnings):
what rebuilds the export. Every config is in one of TRL's dataset formats (conversational
language modeling, prompt-completion or preference): `tests/lake/test_export_trl.py`
checks them with `trl.data_utils`.

An export is whole or absent, with its `exports` row, whatever moment a crash picks. It is
written into a hidden directory beside its destination (`<out>/.<name>.*.crucible-partial`,
flock'ed while written), synced to disk, recorded (the row, with its final path: the
commit point), and only then renamed to its name. So a directory under an export's name
always has its row. A crash before the row leaves a partial directory with no row; a crash
between the row and the rename leaves a complete one whose row points at a path not there
yet. The next export in `<out>` settles both (`recover`): the first is deleted, the second
renamed into place. A reader that finds a row without its directory treats the export as
absent (`_existing_copy`), as it does one deleted by hand.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import io
import json
import logging
import math
import os
import re
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from generators.prompts import Message, answer, feedback_message, instruction_messages
from lake import db
from lake.schema import task_from_row, to_timestamp
from lake.store import Lake
from lake.writer import BatchWriter
from verifiers import domain as domain_registry
from verifiers.contract import Task, canonical_json, content_id, utc_now
from verifiers.domain import PerfMetric

log = logging.getLogger(__name__)

KINDS = ("sft_direct", "sft_repair", "sft_repair_completion", "sft_optimize", "dpo")
# kinds that are another form of one kind's rows: sampled with that kind's keys, so a
# sized export holds the same rows in both forms
SAMPLE_AS = {"sft_repair_completion": "sft_repair"}
MIX_DIMENSIONS = ("domain", "level", "origin")
ANY = "*"  # a mix key matching every value the dimension does not name

# The lake tables an export reads: their versions go into the manifest and the export id
# (not `exports` or `runs`, which recording an export itself changes).
READ_TABLES = ("tasks", "candidates", "verdicts", "trajectories", "dedup")
SQL_FILES = {
    "tasks": "export_tasks",
    "coverage": "export_dedup_coverage",
    "sft_direct": "export_sft_direct",
    "sft_repair": "export_sft_repair",
    "sft_repair_completion": "export_sft_repair",
    "sft_optimize": "export_sft_optimize",
    "dpo": "export_dpo",
    "unproven": "unproven_passes",
    "provenance": "export_provenance",
}
MANIFEST_FORMAT = 3  # 2: counts by level and origin, provenance, warnings; 3: mix shares
# asked vs exported, repair fixes equal to the reference
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# a Hugging Face license identifier (https://huggingface.co/docs/hub/repositories-licenses)
_LICENSE = re.compile(r"[a-z0-9][a-z0-9.+-]*")
_LICENSE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
CHART = "counts.png"

MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
MESSAGES = pa.list_(MESSAGE)
_COMMON = [
    ("task_id", pa.string()),
    ("task_name", pa.string()),
    ("domain", pa.string()),
    ("level", pa.int64()),
    ("origin", pa.string()),
    ("candidate_id", pa.string()),
    ("source_verdict_ids", pa.list_(pa.string())),
]
SCHEMAS: dict[str, pa.Schema] = {
    "sft_direct": pa.schema([("messages", MESSAGES), *_COMMON]),
    "sft_repair": pa.schema(
        [("messages", MESSAGES), *_COMMON, ("trajectory_id", pa.string()), ("rounds", pa.int64())]
    ),
    "sft_repair_completion": pa.schema(
        [
            ("prompt", MESSAGES),
            ("completion", MESSAGES),
            *_COMMON,
            ("trajectory_id", pa.string()),
            ("rounds", pa.int64()),
        ]
    ),
    "sft_optimize": pa.schema(
        [
            ("messages", MESSAGES),
            *_COMMON,
            ("baseline_id", pa.string()),
            ("metric", pa.string()),
            ("baseline_value", pa.float64()),
            ("value", pa.float64()),
        ]
    ),
    "dpo": pa.schema(
        [
            ("prompt", MESSAGES),
            ("chosen", MESSAGES),
            ("rejected", MESSAGES),
            *_COMMON,
            ("chosen_id", pa.string()),
            ("rejected_id", pa.string()),
            ("rejected_status", pa.string()),
        ]
    ),
}

KIND_DOCS = {
    "sft_direct": "requirement -> verified code. `messages`: system, user (the task's "
    "structured instruction), assistant (a candidate that passed every gate).",
    "sft_repair": "multi-turn repair. `messages`: system, user (task), then for each failed "
    "attempt an assistant turn with the code and a user turn with the verifier's status and "
    "tool output, ending with the assistant's verified fix.",
    "sft_repair_completion": "the rows of `sft_repair` as prompt-completion: `prompt` is the "
    "conversation up to and including the last tool feedback, `completion` the verified fix.",
    "sft_optimize": "working code + perf feedback -> better verified code. `messages`: "
    "system, user (task), assistant (a passing but worse solution), user (its measured "
    "performance and the ask), assistant (a passing solution better by the margin).",
    "dpo": "preference pairs (TRL conversational). `prompt`: system + user (task); "
    "`chosen`: a verified pass; `rejected`: a candidate of the same task that compiled but "
    "failed (wrong answer first) unless the settings allowed other failures.",
}

# (TRL dataset format, what a trainer's loss covers by default) per kind
TRAINS_ON = {
    "sft_direct": (
        "conversational language modeling (`messages`)",
        "SFTTrainer: the whole conversation by default; with `assistant_only_loss=True` the "
        "one assistant turn, the verified answer.",
    ),
    "sft_repair": (
        "conversational language modeling (`messages`)",
        "SFTTrainer: the whole conversation by default; with `assistant_only_loss=True` "
        "**every** assistant turn, the failed attempts included: it also teaches writing the "
        "broken code. To train on the fix only, use `sft_repair_completion`.",
    ),
    "sft_repair_completion": (
        "conversational prompt-completion (`prompt`, `completion`)",
        "SFTTrainer: only the completion, the verified fix (`completion_only_loss` defaults "
        "to on for prompt-completion data); the failed attempts and the feedback are context.",
    ),
    "sft_optimize": (
        "conversational language modeling (`messages`)",
        "SFTTrainer: the whole conversation by default; with `assistant_only_loss=True` both "
        "assistant turns, the slower passing solution and the better one.",
    ),
    "dpo": (
        "conversational preference, explicit prompt (`prompt`, `chosen`, `rejected`)",
        "DPOTrainer: the preference of `chosen` over `rejected` given `prompt`.",
    ),
}

# what each column holds; KIND_COLUMNS overrides a common column's meaning per kind
COLUMN_DOCS = {
    "messages": "the conversation: a list of {role, content} (system, user, assistant)",
    "prompt": "the conversation the answer follows: a list of {role, content}",
    "task_id": "the task's id in the lake (`tasks.task_id`)",
    "task_name": "the task's catalog name",
    "domain": "the task's domain (its verifier)",
    "level": "the task's difficulty level",
    "origin": "how the taught code was made (see How the rows were produced)",
    "candidate_id": "the lake id of the code the row teaches (`candidates.candidate_id`)",
    "source_verdict_ids": "the verdicts the row rests on (`verdicts.verdict_id`), in order",
    "trajectory_id": "the repair chain (`trajectories.trajectory_id`)",
    "rounds": "attempts in the chain, the fix included (failed attempts = rounds - 1)",
    "baseline_id": "the passing but worse candidate the row starts from",
    "metric": "the domain's perf metric the pair is compared on",
    "baseline_value": "the metric of the worse candidate",
    "value": "the metric of the better candidate (the answer)",
    "chosen": "one assistant turn: a verified pass",
    "rejected": "one assistant turn: a failure of the same task",
    "chosen_id": "the lake id of the chosen candidate",
    "rejected_id": "the lake id of the rejected candidate",
    "rejected_status": "the rejected candidate's verdict status (e.g. wrong_answer)",
    "completion": "one assistant turn: the verified answer",
}
KIND_COLUMNS = {
    "sft_repair": {
        "origin": "the final fix's origin",
        "candidate_id": "the final fix's lake id",
        "source_verdict_ids": "the failed attempts' verdicts, then the fix's passing verdict",
    },
    "sft_repair_completion": {
        "prompt": "system, user (task), then per failed attempt the assistant's code and the "
        "user turn with the verifier's status and tool output; ends with the last feedback",
        "completion": "one assistant turn: the verified fix",
        "origin": "the final fix's origin",
        "candidate_id": "the final fix's lake id",
        "source_verdict_ids": "the failed attempts' verdicts, then the fix's passing verdict",
    },
    "sft_optimize": {
        "origin": "the better candidate's origin",
        "candidate_id": "the better candidate's lake id",
        "source_verdict_ids": "the worse candidate's verdict, then the better one's",
    },
    "dpo": {
        "prompt": "system + user (the task), as the generator sends it",
        "origin": "the **chosen** candidate's origin (the rejected one's is in the lake: "
        "`candidates` where candidate_id = rejected_id)",
        "candidate_id": "the chosen candidate's lake id (= chosen_id)",
        "source_verdict_ids": "the chosen candidate's verdict, then the rejected one's",
    },
}

# what each candidate origin means, for the card (verifiers.contract.ORIGINS)
ORIGIN_DOCS = {
    "reference": "the task's own reference solution (the catalog's)",
    "rewrite": "a semantics-preserving rewrite of a reference by the offline generator",
    "perturb": "a perturbation of a reference by the offline generator: a mutation that "
    "makes a bug real models make; some are equivalent and pass",
    "llm": "written by a model (the generator names it)",
    "repair": "a fix of a failed candidate: offline, rebuilt from the nearest verified "
    "variant one diff hunk per round; or written by a model from the tool's feedback",
    "optimize": "a model's faster or smaller version of a passing candidate",
}


class ExportError(Exception):
    """The export cannot be made as asked; the message says what to do."""


@dataclass(frozen=True)
class ExportSettings:
    """What to export and how to mix it.

    Mix: target shares of the exported rows, per dimension (domain, level, origin), e.g.
    `{"domain": {"<one>": 0.6, "<another>": 0.4}, "level": {"3": 1, "*": 1}}` (domains by
    their descriptors' names). Levels may be given as ints or strings. Shares are
    normalised to sum to 1 per dimension (the manifest says so when they did not). Once a
    dimension names a share, the values it does not name get none; `"*"` gives them a
    share together (the rest). Per kind (see `draw`):
    - `size=N`: each value's quota is its share of N (largest remainders, so quotas sum to
      N); rows are drawn without replacement in a seeded order. A value with fewer
      eligible rows than its quota gives what it has and the export is that much smaller:
      the shortfall is never filled with other values, which would break their shares;
      a warning says asked, got and why.
    - `size=None`: the largest N at which every share is met by the rows there are (a
      value with no eligible row at all cannot be met at any size: it is left out of that
      and warned about). No mix: every eligible row.
    - Several dimensions: each row counts against its value's quota in every dimension;
      rows of the scarcest quotas are placed first, then the seeded order. A quota the
      others' quotas keep from being met is warned about like a short one.
    The seed orders rows within their values (a hash of `seed`, the kind and the row's id:
    the same lake and settings give the same rows), and rows are written in that order.

    Repair fixes: `reference_fixes=False` leaves out the repair rows whose fix is the
    task's reference solution itself (comments and whitespace folded as the dedup's exact
    key folds them: `is_reference_fix`), which offline repair by reconstruction mostly
    makes; the card counts them either way.

    The card: `license` is a Hugging Face license id, or "other" with `license_name` and
    `license_link` (refused without them); "" leaves it unset and the card says so.
    `pretty_name` titles it (default: the domains it holds).

    Near duplicates: subjects are dedup keepers already. Repair rows are filtered again on
    their first failed attempt (see `filter_repair_near_duplicates`) at `near_dup_threshold`.
    """

    kinds: tuple[str, ...] = KINDS
    mix: Mapping[str, Mapping[str | int, float]] = field(default_factory=dict)
    size: int | None = None
    seed: int = 0
    shard_rows: int = 5000
    dpo_other_failures: bool = False
    optimize_margin: float = 0.05  # relative: better by at least 5% on the perf metric
    optimize_pairs_per_task: int = 3
    near_dup_threshold: float = 0.7
    # repair rows whose fix is the task's reference itself (`is_reference_fix`)
    reference_fixes: bool = True
    # a pass whose equivalence with the reference stayed unknown taught only by its
    # testbench: left out by default (sql/unproven_passes.sql)
    require_proven: bool = True
    # The card's license: a Hugging Face license id (apache-2.0, mit, cc-by-4.0, ...); ""
    # says none was chosen; "other" needs `license_name` (a short id) and `license_link`
    # (the URL or repository path of its text).
    license: str = ""
    license_name: str = ""
    license_link: str = ""
    pretty_name: str = ""  # default: from the domains and configs it holds
    name: str = ""  # default: export-<UTC timestamp>
    out: Path = Path("exports")

    def __post_init__(self) -> None:
        kinds = tuple(self.kinds)
        object.__setattr__(self, "kinds", kinds)
        unknown = [k for k in kinds if k not in KINDS]
        if unknown or not kinds or len(set(kinds)) != len(kinds):
            raise ValueError(f"export kinds {list(kinds)}: pick distinct ones of {list(KINDS)}")
        for dim, weights in self.mix.items():
            if dim not in MIX_DIMENSIONS:
                raise ValueError(f"mix dimension {dim!r}: use {', '.join(MIX_DIMENSIONS)}")
            bad = {k: w for k, w in weights.items() if not _share_ok(w)}
            if bad:
                raise ValueError(f"mix shares must be numbers, finite and >= 0: {dim} {bad}")
            if weights and not any(weights.values()):
                raise ValueError(
                    f"mix {dim}: every share is 0, so nothing would be exported (values the "
                    f"mix does not name get none); to leave out only these, give the rest a "
                    f'share: {{"{dim}": {{..., "{ANY}": 1}}}}'
                )
        if self.size is not None and self.size < 0:
            raise ValueError("size must be None (everything eligible) or >= 0")
        if self.shard_rows < 1:
            raise ValueError("shard_rows must be at least 1")
        if not 0 < self.near_dup_threshold < 1:
            raise ValueError("near_dup_threshold must be in (0, 1)")
        if self.optimize_margin < 0 or self.optimize_pairs_per_task < 1:
            raise ValueError("optimize_margin must be >= 0 and optimize_pairs_per_task >= 1")
        if self.name and not _NAME.fullmatch(self.name):
            raise ValueError(
                f"export name {self.name!r}: letters, digits, '.', '_', '-', not starting "
                "with a dot (it becomes a directory name)"
            )
        _check_license(self.license, self.license_name, self.license_link)
        if "\n" in self.pretty_name:
            raise ValueError("pretty_name must be one line")
        object.__setattr__(self, "out", Path(self.out))

    def content(self) -> dict[str, Any]:
        """The settings that decide what an export holds (not its name or where it goes)."""
        d = asdict(self)
        d.pop("name")
        d.pop("out")
        d["kinds"] = list(self.kinds)
        d["mix"] = {
            dim: {str(k): float(w) for k, w in sorted(ws.items(), key=lambda kv: str(kv[0]))}
            for dim, ws in sorted(self.mix.items())
        }
        return d


def _share_ok(w: Any) -> bool:
    return isinstance(w, int | float) and not isinstance(w, bool) and math.isfinite(w) and w >= 0


def _check_license(license: str, name: str, link: str) -> None:
    """The license fields as the Hub reads them; a bad combination says what to pass."""
    if license and not _LICENSE.fullmatch(license):
        raise ValueError(
            f"license {license!r}: use a Hugging Face license id (lowercase, e.g. apache-2.0, "
            "mit, cc-by-4.0), or 'other' with a license name and link"
        )
    if license == "other":
        if not name or not link:
            raise ValueError(
                "license 'other' needs --license-name (a short id, e.g. my-license-1.0) and "
                "--license-link (the URL or repository path of the license text)"
            )
        if not _LICENSE_NAME.fullmatch(name):
            raise ValueError(
                f"license name {name!r}: lowercase letters, digits, '.', '_', '-' (an id, "
                "e.g. my-license-1.0)"
            )
        if any(c.isspace() for c in link):
            raise ValueError(f"license link {link!r}: a URL or path, without spaces")
    elif name or link:
        given = "--license-name" if name else "--license-link"
        raise ValueError(
            f"{given} goes with --license other (a license the Hub has no id for); "
            + (
                f"license {license!r} is an id already: leave it out"
                if license
                else "pass --license other too, or a Hub license id instead"
            )
        )


@dataclass(frozen=True)
class ExportResult:
    path: Path
    manifest: dict[str, Any]
    counts: dict[str, int]


@dataclass
class ExportRow:
    """One output row plus what sampling and bookkeeping need but the file does not hold."""

    key: str  # stable id of the row within its kind
    data: dict[str, Any]
    verifier: tuple[str, str, str, str]  # domain, verifier, version, toolchain JSON
    reference_fix: bool = False  # a repair row whose fix is its task's reference


# --- entry point ---------------------------------------------------------------------------


def export(
    lake: Lake, con: duckdb.DuckDBPyConnection, settings: ExportSettings, *, run_id: str = ""
) -> ExportResult:
    """Build the kinds `settings` asks for, write them atomically, record the export."""
    created_at = utc_now()
    name = settings.name or default_name(created_at)
    out = settings.out.absolute()
    final = out / name
    if final.exists():
        raise ExportError(f"export {final} already exists: pick another name or remove it")
    versions = lake.versions()
    read_versions = {t: versions[t] for t in READ_TABLES}
    built, stats, mixes = build_rows(con, settings)
    provenance = export_provenance(con, built)
    warnings = export_warnings(settings, built, mixes)
    for line in mix_notes(settings.mix):
        log.info("export: %s", line)
    for line in warnings:
        log.warning("export: %s", line)
    out.mkdir(parents=True, exist_ok=True)
    recover(con, out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=PARTIAL, dir=out))
    with _writing(tmp):
        try:
            files = _write_kinds(tmp, built, settings.shard_rows)
            manifest = _manifest(
                name, created_at, settings, built, stats, files, read_versions, provenance,
                warnings, mixes,
            )  # fmt: skip
            _write_card(tmp, manifest)
            same = None if settings.name else _existing_copy(con, manifest["export_id"])
            if same is not None:
                # An unnamed export identical to one already written (same lake state, same
                # settings): keep that one, which the exports table points at, so rerunning
                # the pipeline on an unchanged lake leaves no second copy.
                shutil.rmtree(tmp, ignore_errors=True)
                log.info("export %s is identical to %s: kept that one", name, same)
                return ExportResult(same, manifest, dict(manifest["counts"]))
            if final.exists():
                raise ExportError(f"export {final} appeared while writing: pick another name")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            _record(lake, run_id, final, settings, manifest)  # the commit point
        except BaseException:
            _settle(con, tmp)  # a commit that landed before the error still gets its dir
            raise
        os.rename(tmp, final)
        _sync_dir(out)
    log.info("export %s written to %s: %s", name, final, manifest["counts"])
    return ExportResult(final, manifest, dict(manifest["counts"]))


def _write_card(tmp: Path, manifest: dict[str, Any]) -> None:
    """The manifest, chart and dataset card beside the shards; then all of it synced to
    disk: whole before the row says it exists."""
    _write_text(tmp / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    write_chart(manifest, tmp / CHART)
    _write_text(tmp / "README.md", dataset_card(manifest))
    _sync_tree(tmp)


# The hidden directory an export is written in, beside its destination.
PARTIAL = ".crucible-partial"


def recover(con: duckdb.DuckDBPyConnection, out: Path) -> list[str]:
    """Settle what interrupted exports left in `out`: a partial directory whose export was
    recorded (the crash came between its row and its rename) is renamed into place, any
    other is deleted. One still being written (its flock held: another export in this
    directory) is left alone. Returns what was done, a line per directory."""
    done = []
    for tmp in sorted(out.glob(f".*{PARTIAL}")):
        if not tmp.is_dir():
            continue
        try:
            with _writing(tmp, wait=False):
                done.append(_settle(con, tmp))
        except BlockingIOError:
            continue  # being written now
        except FileNotFoundError:
            continue  # settled by another export meanwhile
    return done


def _settle(con: duckdb.DuckDBPyConnection, tmp: Path) -> str:
    """Rename a recorded partial directory to its export's path, or delete it."""
    try:
        manifest = json.loads((tmp / "manifest.json").read_text())
        final = tmp.parent / manifest["name"]
        row = con.execute(
            "SELECT 1 FROM exports WHERE export_id = $id AND path = $path",
            {"id": manifest["export_id"], "path": str(final)},
        ).fetchone()
    except (OSError, ValueError, KeyError, TypeError):
        row, final = None, None  # no whole manifest: it never got as far as its row
    if row is not None and final is not None and not final.exists():
        os.rename(tmp, final)
        _sync_dir(tmp.parent)
        what = f"finished the export {final}: it was recorded but not yet in place"
        log.warning("%s", what)
        return what
    shutil.rmtree(tmp, ignore_errors=True)
    what = f"removed {tmp}: an export interrupted before it was recorded"
    log.warning("%s", what)
    return what


@contextlib.contextmanager
def _writing(path: Path, wait: bool = True) -> Iterator[None]:
    """An flock on the directory while an export writes it (or settles it): `recover`
    leaves a live export's directory alone, and the kernel drops the lock of one whose
    process died."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        yield
    finally:
        os.close(fd)


def _sync_tree(root: Path) -> None:
    for path in sorted(root.rglob("*"), reverse=True):  # files before their directories
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        elif path.is_dir():
            _sync_dir(path)
    _sync_dir(root)


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def build_rows(
    con: duckdb.DuckDBPyConnection, settings: ExportSettings
) -> tuple[dict[str, list[ExportRow]], dict[str, dict[str, int]], dict[str, dict[str, Any]]]:
    """Every kind's rows after eligibility, filters and the mix; per-kind counters; and
    per kind the mix report (`draw`)."""
    _require_dedup(con, settings)
    tasks = {r["task_id"]: task_from_row(r) for r in db.rows(con, SQL_FILES["tasks"])}
    built: dict[str, list[ExportRow]] = {}
    stats: dict[str, dict[str, int]] = {}
    mixes: dict[str, dict[str, Any]] = {}
    unproven = (
        {r["verdict_id"] for r in db.rows(con, SQL_FILES["unproven"])}
        if settings.require_proven
        else set()
    )
    for kind in settings.kinds:
        rows, kind_stats = BUILDERS[kind](con, tasks, settings)
        if settings.require_proven:
            n = len(rows)
            rows = [r for r in rows if not unproven.intersection(r.data["source_verdict_ids"])]
            kind_stats = {**kind_stats, "unproven_dropped": n - len(rows)}
        drawn = draw(rows, SAMPLE_AS.get(kind, kind), settings)
        built[kind], mixes[kind] = drawn.rows, drawn.report
        stats[kind] = {**kind_stats, "eligible": len(rows), "exported": len(built[kind])}
        log.info("export: %s %d rows of %d eligible", kind, len(built[kind]), len(rows))
    return built, stats, mixes


def export_warnings(
    settings: ExportSettings,
    built: Mapping[str, Sequence[ExportRow]],
    mixes: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """What the user asked for and did not get: a size above what is eligible, a share
    left short (asked, got and why), empty kinds."""
    out = []
    empty = (
        "written as one empty shard with the schema, not declared as a config of the card "
        "(datasets cannot load an empty split)"
    )
    for kind, rows in built.items():
        report = (mixes or {}).get(kind) or {}
        dims = report.get("dimensions") or {}
        sized_short = settings.size is not None and len(rows) < settings.size
        if not dims or not report.get("eligible"):  # no mix, or nothing to mix
            if sized_short:
                out.append(
                    f"{kind}: size {settings.size} asked, only {len(rows)} "
                    f"{'row' if len(rows) == 1 else 'rows'} eligible: "
                    f"exported {len(rows)}"
                )
            elif not rows:
                out.append(f"{kind}: no eligible rows; {empty}")
            continue
        if sized_short:
            out.append(
                f"{kind}: size {settings.size} asked, exported {len(rows)}: the shares left "
                "short below are not filled with other values (that would break their shares)"
            )
        for dim, entries in dims.items():
            out += [_short_share(kind, dim, e, report, len(rows)) for e in entries if _short(e)]
        if not rows:
            out.append(
                f"{kind}: no eligible rows with a share in the mix ({report['eligible']} "
                f"eligible in all); {empty}"
            )
    return out


def _short(entry: Mapping[str, Any]) -> bool:
    return entry["exported"] < entry["target"]


def _short_share(
    kind: str, dim: str, e: Mapping[str, Any], report: Mapping[str, Any], exported: int
) -> str:
    """One share left short: asked, got, why."""
    name = "the rest (*)" if e["value"] == ANY else e["value"]
    n = e["eligible"]
    if n < e["target"]:
        why = (
            f"only {n} eligible {name} {'row' if n == 1 else 'rows'}"
            if n
            else f"no eligible {name} row"
        )
    else:
        others = [d for d in report["dimensions"] if d != dim]
        why = (
            f"{n} eligible, but the rest of them fall under quotas of "
            f"{' and '.join(others)} that were full"
        )
    of = f"size {report['size']}" if report["sized_by"] == "size" else f"{report['size']} rows"
    return (
        f"{kind}: {dim} {name}: asked share {e['asked']:.4g} ({e['target']} of {of}), "
        f"exported {e['exported']} ({e['share']:.4g} of {exported}): {why}"
    )


def export_provenance(
    con: duckdb.DuckDBPyConnection, built: Mapping[str, Sequence[ExportRow]]
) -> dict[str, Any]:
    """Where the rows' code came from and what a pass means here.

    `codes`: distinct candidates behind the rows per (origin, generator family, verdict
    status); `gates`: per domain, the gate lists the rows' passing verdicts ran, with their
    counts, and the domain's full list from its registry descriptor; `offline_only`: no code
    was written by a model (the offline channel's origins, repairs by reconstruction).
    """
    from generators.perturb import PerturbChannel
    from generators.perturb.repair import ReconstructRepair

    ids = sorted({v for rows in built.values() for r in rows for v in r.data["source_verdict_ids"]})
    found = db.rows(con, SQL_FILES["provenance"], verdict_ids=ids) if ids else []
    codes: Counter[tuple[str, str, str]] = Counter()
    seen: set[tuple[str, str]] = set()
    gates: dict[str, Counter[tuple[str, ...]]] = defaultdict(Counter)
    offline_only = True
    for r in found:
        family = (r["generator"] or "").split(":", 1)[0] or "-"
        status = "pass" if r["status"] == "pass" else "fail"
        if (r["candidate_id"], status) not in seen:
            seen.add((r["candidate_id"], status))
            codes[(r["origin"], family, status)] += 1
        if status == "pass":
            gates[r["domain"]][tuple(r["gates"])] += 1
        offline = r["origin"] in PerturbChannel.origins or (
            r["origin"] == "repair" and family == ReconstructRepair.name
        )
        offline_only = offline_only and offline
    registry: dict[str, list[list[str]]] = {}
    for d in sorted({r.data["domain"] for rows in built.values() for r in rows}):
        try:
            desc = domain_registry.get(d)
        except domain_registry.UnknownDomain:
            continue
        registry[d] = [["format", desc.stage_of("format")], *([g, st] for g, st in desc.gates)]
    return {
        "codes": [
            {"origin": o, "generator": g, "status": st, "candidates": n}
            for (o, g, st), n in sorted(codes.items())
        ],
        "gates": {
            d: [{"gates": list(gs), "verdicts": n} for gs, n in sorted(c.items())]
            for d, c in sorted(gates.items())
        },
        "registry_gates": registry,
        "offline_only": bool(found) and offline_only,
    }


def _record(
    lake: Lake, run_id: str, path: Path, settings: ExportSettings, manifest: Mapping[str, Any]
) -> None:
    """One `exports` row; an export of the same content (same id) adds none."""
    with BatchWriter(lake, run_id=run_id) as w:
        w.add(
            "exports",
            [
                {
                    "export_id": manifest["export_id"],
                    "name": manifest["name"],
                    "path": str(path),
                    "kinds": list(settings.kinds),
                    "rows": sum(manifest["counts"].values()),
                    "manifest": canonical_json(manifest),
                    "run_id": run_id,
                    "created_at": to_timestamp(manifest["created_at"]),
                }
            ],
        )


def _existing_copy(con: duckdb.DuckDBPyConnection, export_id: str) -> Path | None:
    """Where an export with this id was written before, if it is still there."""
    row = con.execute(
        "SELECT path FROM exports WHERE export_id = $id", {"id": export_id}
    ).fetchone()
    if row and (Path(row[0]) / "manifest.json").is_file():
        return Path(row[0])
    return None


def default_name(created_at: str) -> str:
    ts = datetime.fromisoformat(created_at).astimezone(UTC)
    return "export-" + ts.strftime("%Y%m%dT%H%M%S") + f"{ts.microsecond // 1000:03d}Z"


def _require_dedup(con: duckdb.DuckDBPyConnection, settings: ExportSettings) -> None:
    for r in db.rows(con, SQL_FILES["coverage"]):
        if not domain_wanted(r["domain"], settings.mix):
            continue
        if r["judged"] == 0:
            raise ExportError(
                f"domain {r['domain']!r} has {r['passing']} passing candidates and no dedup "
                "rows: exports take only dedup keepers; run `crucible dedup` first"
            )
        if r["judged"] < r["passing"]:
            log.warning(
                "domain %s: %d of %d passing candidates have no dedup row and are left out; "
                "run `crucible dedup` to include them",
                r["domain"],
                r["passing"] - r["judged"],
                r["passing"],
            )


# --- the four kinds --------------------------------------------------------------------------


def _common(task: Task, r: Mapping[str, Any], verdict_ids: Sequence[str]) -> dict[str, Any]:
    return {
        "task_id": task.task_id,
        "task_name": task.name,
        "domain": task.domain,
        "level": int(task.level),
        "origin": r["origin"],
        "candidate_id": r["candidate_id"],
        "source_verdict_ids": list(verdict_ids),
    }


def _verifier(r: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (r["domain"], r["verifier"], r["verifier_version"], r["toolchain"] or "{}")


def build_sft_direct(
    con: duckdb.DuckDBPyConnection, tasks: Mapping[str, Task], settings: ExportSettings
) -> tuple[list[ExportRow], dict[str, int]]:
    rows = []
    for r in db.rows(con, SQL_FILES["sft_direct"]):
        task = tasks[r["task_id"]]
        data = {
            "messages": [*instruction_messages(task), answer(task, r["code"])],
            **_common(task, r, [r["verdict_id"]]),
        }
        rows.append(ExportRow(r["candidate_id"], data, _verifier(r)))
    return rows, {}


def build_sft_repair(
    con: duckdb.DuckDBPyConnection, tasks: Mapping[str, Task], settings: ExportSettings
) -> tuple[list[ExportRow], dict[str, int]]:
    rows, firsts, dropped = [], [], 0
    for r in db.rows(con, SQL_FILES["sft_repair"]):
        task = tasks[r["task_id"]]
        *failed, fix = r["turns"]
        messages = instruction_messages(task)
        for turn in failed:
            messages += [
                answer(task, turn["code"]),
                feedback_message(turn["status"], turn["feedback"] or ""),
            ]
        messages.append(answer(task, fix["code"]))
        verdict_ids = [t["verdict_id"] for t in failed] + [r["verdict_id"]]
        data = {
            "messages": messages,
            **_common(task, r, verdict_ids),
            "trajectory_id": r["trajectory_id"],
            "rounds": int(r["rounds"]),
        }
        ref_fix = is_reference_fix(task, fix["code"])
        if ref_fix and not settings.reference_fixes:
            dropped += 1
            continue  # before the near-duplicate filter: a cluster keeps a row it may export
        rows.append(ExportRow(r["trajectory_id"], data, _verifier(r), reference_fix=ref_fix))
        firsts.append(failed[0]["code"])
    kept = filter_repair_near_duplicates(rows, firsts, settings.near_dup_threshold)
    return kept, {
        "near_duplicates_dropped": len(rows) - len(kept),
        "reference_fixes_dropped": dropped,
    }


def is_reference_fix(task: Task, code: str) -> bool:
    """The fix is the task's reference solution itself: the same code once comments and
    whitespace are folded as the dedup's exact key folds them (`lake.dedup.normalize`, per
    the domain's language), so a copy of the reference re-indented or with a comment
    changed counts; any change to the code itself does not. Offline repair rebuilds a
    fix from the nearest verified variant, which is mostly the reference."""
    from lake.dedup import normalize

    if not task.reference:
        return False
    return normalize(code, task.domain) == normalize(task.reference, task.domain)


def build_sft_repair_completion(
    con: duckdb.DuckDBPyConnection, tasks: Mapping[str, Task], settings: ExportSettings
) -> tuple[list[ExportRow], dict[str, int]]:
    """The repair rows as prompt-completion: the conversation up to and including the last
    tool feedback is the prompt, the verified fix the completion (TRL's loss then covers
    the fix only, not the failed attempts)."""
    rows, stats = build_sft_repair(con, tasks, settings)
    out = []
    for row in rows:
        data = dict(row.data)
        *prompt, fix = data.pop("messages")
        data = {"prompt": prompt, "completion": [fix], **data}
        out.append(ExportRow(row.key, data, row.verifier, reference_fix=row.reference_fix))
    return out, stats


def filter_repair_near_duplicates(
    rows: Sequence[ExportRow], first_attempts: Sequence[str], threshold: float
) -> list[ExportRow]:
    """One repair row per near-duplicate cluster of first failed attempts, per domain.

    The fixes are dedup keepers, but the failed attempts are not deduplicated: they are
    mostly mutations of one reference, so many trajectories open with nearly the same
    broken code and teach the same repair. Per cluster the row kept is the one with the
    fewest rounds, then the shortest conversation, then the smallest trajectory id.
    """
    from lake.dedup import DedupSettings, near_duplicate_clusters

    dedup_settings = DedupSettings(threshold=threshold)
    by_domain: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_domain[row.data["domain"]].append(i)
    kept: list[ExportRow] = []
    for domain, idx in sorted(by_domain.items()):
        labels = near_duplicate_clusters([first_attempts[i] for i in idx], domain, dedup_settings)
        best: dict[int, ExportRow] = {}
        for i, label in zip(idx, labels, strict=True):
            row = rows[i]
            held = best.get(label)
            if held is None or _repair_rank(row) < _repair_rank(held):
                best[label] = row
        kept += best.values()
    return kept


def _repair_rank(row: ExportRow) -> tuple[int, int, str]:
    chars = sum(len(m["content"]) for m in row.data["messages"])
    return (row.data["rounds"], chars, row.key)


def build_sft_optimize(
    con: duckdb.DuckDBPyConnection, tasks: Mapping[str, Task], settings: ExportSettings
) -> tuple[list[ExportRow], dict[str, int]]:
    """Per task: each passing keeper that the task's best beats by the margin -> the best.

    Up to `optimize_pairs_per_task` pairs per task, the largest gains first; a candidate
    without the domain's metric (its perf gate did not run), or whose time the verifier
    flagged (`implausible_speedup` in its metrics), takes no part.
    """
    pool: dict[str, list[tuple[float, dict[str, Any]]]] = defaultdict(list)
    perfs: dict[str, PerfMetric | None] = {}
    for r in db.rows(con, SQL_FILES["sft_optimize"]):
        if r["domain"] not in perfs:
            perfs[r["domain"]] = perf_metric(r["domain"])
        perf = perfs[r["domain"]]
        metrics = json.loads(r["metrics"] or "{}")
        if metrics.get("implausible_speedup"):  # a flagged time is no gain to learn from
            continue
        value = metrics.get(perf.name) if perf else None
        if _numeric(value) and math.isfinite(value):
            pool[r["task_id"]].append((float(value), r))
    rows = []
    for task_id, entries in sorted(pool.items()):
        task = tasks[task_id]
        perf = perf_metric(task.domain)
        if perf is None:  # not reached: a pooled row's domain (its task's) has a metric
            continue
        metric, direction = perf.name, perf.direction
        sign = 1.0 if direction == "lower" else -1.0
        entries.sort(key=lambda e: (sign * e[0], e[1]["candidate_id"]))
        best_value, best = entries[0]
        pairs = [
            (value, r)
            for value, r in entries[1:]
            if _better_by(best_value, value, direction, settings.optimize_margin)
            and _confirmed(perf, best, r)
        ]
        pairs.sort(key=lambda e: (-sign * e[0], e[1]["candidate_id"]))  # largest gain first
        for value, slow in pairs[: settings.optimize_pairs_per_task]:
            metrics = json.loads(slow["metrics"] or "{}")
            messages = [
                *instruction_messages(task),
                answer(task, slow["code"]),
                optimize_message(task.domain, metrics),
                answer(task, best["code"]),
            ]
            data = {
                "messages": messages,
                **_common(task, best, [slow["verdict_id"], best["verdict_id"]]),
                "baseline_id": slow["candidate_id"],
                "metric": metric,
                "baseline_value": value,
                "value": best_value,
            }
            key = f"{slow['candidate_id']}>{best['candidate_id']}"
            rows.append(ExportRow(key, data, _verifier(best)))
    return rows, {}


def _confirmed(perf: PerfMetric, best: Mapping[str, Any], slow: Mapping[str, Any]) -> bool:
    """The pair's gain holds on the domain's second metric too (`PerfMetric.confirm`: the
    better one strictly better there), where the domain names one."""
    if perf.confirm is None:
        return True
    name, direction = perf.confirm
    a = json.loads(best["metrics"] or "{}").get(name)
    b = json.loads(slow["metrics"] or "{}").get(name)
    if not (_numeric(a) and _numeric(b)):
        return False
    return a < b if direction == "lower" else a > b


def _better_by(best: float, other: float, direction: str, margin: float) -> bool:
    if direction == "lower":
        return best <= other * (1 - margin) and best < other
    return best >= other * (1 + margin) and best > other


def perf_metric(domain: str) -> PerfMetric | None:
    """The metric `domain`'s optimization pairs compare (its descriptor's), if it has one."""
    try:
        return domain_registry.get(domain).perf
    except domain_registry.UnknownDomain:
        return None


def optimize_message(domain: str, metrics: Mapping[str, Any]) -> Message:
    """The user turn that reports a passing solution's performance and asks for better.

    Kept here until an optimize generator exists; then it belongs to generators.prompts.
    """
    perf = perf_metric(domain)
    if perf is None:
        raise ValueError(f"domain {domain!r} declares no perf metric: no optimize prompt")
    metric = perf.name
    others = perf.report or sorted(k for k in metrics if k != metric)
    shown = [metric, *(k for k in others if k != metric and _numeric(metrics.get(k)))]
    parts = []
    for k in shown:
        unit = perf.unit if k == metric else ""
        parts.append(f"{k} {_number(metrics[k])}{' ' + unit if unit else ''}")
    return {
        "role": "user",
        "content": f"The verifier passed this solution. Measured: {'; '.join(parts)}.\n\n"
        f"Make it {perf.ask} ({perf.direction} {metric}) while keeping the behaviour "
        "exactly. Answer with the complete solution in one code block.",
    }


def _numeric(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _number(v: float) -> str:
    return str(v) if isinstance(v, int) else f"{v:.4g}"


def build_dpo(
    con: duckdb.DuckDBPyConnection, tasks: Mapping[str, Task], settings: ExportSettings
) -> tuple[list[ExportRow], dict[str, int]]:
    """Per task, chosen and rejected candidates paired one to one.

    Chosen in a seeded order; rejected ranked functional failures that compiled first,
    then other failures that compiled, then (with `dpo_other_failures`) failures that did
    not compile, seeded within a rank. Each candidate is used at most once, so a task gives
    min(#chosen, #rejected) pairs, and the uncompiled fallbacks appear only once a task's
    compiled failures are used up.
    """
    pools: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(
        lambda: {"chosen": [], "rejected": []}
    )
    for r in db.rows(con, SQL_FILES["dpo"], other_failures=settings.dpo_other_failures):
        pools[r["task_id"]][r["role"]].append(r)
    rows = []
    seed = settings.seed
    for task_id, pool in sorted(pools.items()):
        task = tasks[task_id]
        chosen = sorted(pool["chosen"], key=lambda r: _unit(seed, "dpo", r["candidate_id"]))
        rejected = sorted(
            pool["rejected"],
            key=lambda r: (
                not r["compiled"],
                not r["functional"],
                _unit(seed, "dpo", r["candidate_id"]),
            ),
        )
        prompt = instruction_messages(task)
        for good, bad in zip(chosen, rejected, strict=False):
            chosen_msg, rejected_msg = answer(task, good["code"]), answer(task, bad["code"])
            if chosen_msg == rejected_msg:  # differs only in surrounding whitespace
                continue
            data = {
                "prompt": prompt,
                "chosen": [chosen_msg],
                "rejected": [rejected_msg],
                **_common(task, good, [good["verdict_id"], bad["verdict_id"]]),
                "chosen_id": good["candidate_id"],
                "rejected_id": bad["candidate_id"],
                "rejected_status": bad["status"],
            }
            key = f"{good['candidate_id']}>{bad['candidate_id']}"
            rows.append(ExportRow(key, data, _verifier(good)))
    return rows, {}


BUILDERS = {
    "sft_direct": build_sft_direct,
    "sft_repair": build_sft_repair,
    "sft_repair_completion": build_sft_repair_completion,
    "sft_optimize": build_sft_optimize,
    "dpo": build_dpo,
}


# --- mix and sampling ------------------------------------------------------------------------


def mix_shares(mix: Mapping[str, Mapping[str | int, float]]) -> dict[str, dict[str, Fraction]]:
    """The mix as exact target shares: per dimension that names any value, each named
    value's share (`"*"`: the unnamed values' together), normalised to sum to 1. Exact
    (the decimals as written), so quotas round the same way everywhere."""
    out: dict[str, dict[str, Fraction]] = {}
    for dim in MIX_DIMENSIONS:
        given = {str(k): Fraction(repr(float(w))) for k, w in (mix.get(dim) or {}).items()}
        total = sum(given.values())
        if total:
            out[dim] = {k: given[k] / total for k in sorted(given, key=_share_order)}
    return out


def _share_order(value: str) -> tuple[bool, tuple[int, int, str]]:
    return (value == ANY, _sort_key(value))  # the rest last


def mix_notes(mix: Mapping[str, Mapping[str | int, float]]) -> list[str]:
    """What the mix was taken to mean, where it was not literal: shares not summing to 1."""
    notes = []
    for dim, shares in mix_shares(mix).items():
        total = sum(Fraction(repr(float(w))) for w in mix[dim].values())
        if total != 1:
            shown = ", ".join(f"{v} {float(x):.4g}" for v, x in shares.items())
            notes.append(
                f"mix {dim}: the shares sum to {float(total):.4g}, not 1: normalised to {shown}"
            )
    return notes


def bucket(value: Any, shares: Mapping[str, Fraction]) -> str | None:
    """The entry of a dimension's shares a value counts against: its own, else `"*"`'s;
    None when the dimension names neither (it gets no share)."""
    text = str(value)
    if text != ANY and text in shares:
        return text
    return ANY if ANY in shares else None


def domain_wanted(domain: str, mix: Mapping[str, Mapping[str | int, float]]) -> bool:
    """Whether the mix gives `domain` a share (no domain shares: every domain has one)."""
    shares = mix_shares(mix).get("domain")
    if shares is None:
        return True
    b = bucket(domain, shares)
    return b is not None and shares[b] > 0


def quotas(shares: Mapping[str, Fraction], n: int) -> dict[str, int]:
    """`n` split by `shares` (summing to 1) into integers summing to `n`: each gets the
    floor of its share, the rest go one each to the largest remainders (ties: by value)."""
    raw = {v: s * n for v, s in shares.items()}
    out = {v: math.floor(x) for v, x in raw.items()}
    for v in sorted(raw, key=lambda v: (out[v] - raw[v], _sort_key(v)))[: n - sum(out.values())]:
        out[v] += 1
    return out


@dataclass(frozen=True)
class Draw:
    """A kind's rows as the mix drew them, and the mix report: per dimension, each share
    asked against what was exported (the manifest's `mix`)."""

    rows: list[ExportRow]
    report: dict[str, Any]


def draw(rows: Sequence[ExportRow], kind: str, settings: ExportSettings) -> Draw:
    """The rows the mix and the size ask for (see `ExportSettings`), in seeded order."""
    shares = mix_shares(settings.mix)
    unit = {r.key: _unit(settings.seed, kind, r.key) for r in rows}
    order = sorted(rows, key=lambda r: (-unit[r.key], r.key))
    buckets = {r.key: {d: bucket(r.data[d], ws) for d, ws in shares.items()} for r in rows}

    positive = {d: {v for v, x in ws.items() if x > 0} for d, ws in shares.items()}

    def wanted(row: ExportRow, but: str = "") -> bool:
        return all(b in positive[d] for d, b in buckets[row.key].items() if d != but)

    pool = [r for r in order if wanted(r)]
    # eligible per (dimension, value): rows that the other dimensions' shares let in
    eligible = {
        d: Counter(buckets[r.key][d] or str(r.data[d]) for r in order if wanted(r, but=d))
        for d in shares
    }
    if settings.size is not None:
        target, sized_by = settings.size, "size"
    elif shares:
        target, sized_by = _fitting_size(shares, eligible, len(pool)), "shares"
    else:
        target, sized_by = len(pool), "all"
    quota = {d: quotas(ws, target) for d, ws in shares.items()}
    left = {d: dict(q) for d, q in quota.items()}

    @functools.cache
    def scarcity_of(own: tuple[tuple[str, str | None], ...]) -> float:
        ratios = [eligible[d][b] / quota[d][b] for d, b in own if b and quota[d][b]]
        return min(ratios, default=0.0)

    def scarcity(row: ExportRow) -> float:
        return scarcity_of(tuple(buckets[row.key].items()))

    picked = []
    for row in sorted(pool, key=scarcity) if len(shares) > 1 else pool:
        if len(picked) == target:
            break
        own = buckets[row.key]
        if all(left[d][b] > 0 for d, b in own.items()):  # type: ignore[index]
            picked.append(row)
            for d, b in own.items():
                left[d][b] -= 1  # type: ignore[index]
    picked.sort(key=lambda r: (-unit[r.key], r.key))
    report = _mix_report(picked, shares, eligible, quota, target, sized_by)
    return Draw(picked, {"eligible": len(rows), **report})


def sample(rows: Sequence[ExportRow], kind: str, settings: ExportSettings) -> list[ExportRow]:
    """`draw`'s rows only."""
    return draw(rows, kind, settings).rows


def _fitting_size(
    shares: Mapping[str, Mapping[str, Fraction]],
    eligible: Mapping[str, Counter[str]],
    most: int,
) -> int:
    """The largest size whose quotas the eligible rows meet in every dimension, a value
    with no eligible row left out (no size meets it)."""
    bounds = [
        math.floor(eligible[d][v] / s)
        for d, ws in shares.items()
        for v, s in ws.items()
        if s > 0 and eligible[d][v] > 0
    ]
    n = min([most, *bounds])
    while n > 0 and any(
        q > eligible[d][v] > 0 for d, ws in shares.items() for v, q in quotas(ws, n).items()
    ):
        n -= 1  # a remainder rounded up past what is there
    return n


def _mix_report(
    picked: Sequence[ExportRow],
    shares: Mapping[str, Mapping[str, Fraction]],
    eligible: Mapping[str, Counter[str]],
    quota: Mapping[str, Mapping[str, int]],
    target: int,
    sized_by: str,
) -> dict[str, Any]:
    """Per dimension, per value: the share asked (normalised), its quota of the target
    size, the eligible rows, the rows exported and their share of the export. Values
    the mix does not name (no `"*"`) are listed with share 0 (`named` false): the rows
    they had were left out."""
    dims: dict[str, list[dict[str, Any]]] = {}
    for d, ws in shares.items():
        got = Counter(bucket(r.data[d], ws) for r in picked)
        entries = []
        for v in [*ws, *sorted(set(eligible[d]) - set(ws), key=_sort_key)]:
            entries.append(
                {
                    "value": v,
                    "named": v in ws,
                    "asked": float(ws.get(v, 0)),
                    "target": quota[d].get(v, 0),
                    "eligible": eligible[d][v],
                    "exported": got[v],
                    "share": round(got[v] / len(picked), 4) if picked else 0.0,
                }
            )
        dims[d] = entries
    return {"size": target, "sized_by": sized_by, "dimensions": dims}


def _unit(seed: int, kind: str, key: str) -> float:
    """A uniform number in (0, 1) fixed by (seed, kind, key): independent of other rows."""
    h = hashlib.sha256(f"{seed}\0{kind}\0{key}".encode()).digest()
    return (int.from_bytes(h[:8], "big") + 0.5) / 2**64


# --- writing ------------------------------------------------------------------------------------


def shard_name(index: int, count: int) -> str:
    return f"train-{index:05d}-of-{count:05d}.parquet"


def _write_kinds(
    root: Path, built: Mapping[str, Sequence[ExportRow]], shard_rows: int
) -> list[dict[str, Any]]:
    files = []
    for kind, rows in built.items():
        table = pa.Table.from_pylist([r.data for r in rows], schema=SCHEMAS[kind])
        count = max(1, math.ceil(len(rows) / shard_rows))  # an empty kind gets one empty shard
        data_dir = root / "data" / kind
        data_dir.mkdir(parents=True)
        for i in range(count):
            rel = f"data/{kind}/{shard_name(i, count)}"
            if rows:
                pq.write_table(table.slice(i * shard_rows, shard_rows), root / rel)
            else:
                # No row group at all: a row group of 0 rows makes readers that batch by
                # row group size (datasets' Parquet builder) fail with "BatchSize must be
                # greater than 0"; the footer still carries the schema.
                pq.ParquetWriter(root / rel, SCHEMAS[kind]).close()
            files.append(_file_entry(root, rel, kind, min(shard_rows, len(rows) - i * shard_rows)))
        rel = f"jsonl/{kind}.jsonl"
        (root / "jsonl").mkdir(exist_ok=True)
        _write_text(
            root / rel, "".join(json.dumps(r.data, ensure_ascii=False) + "\n" for r in rows)
        )
        files.append(_file_entry(root, rel, kind, len(rows)))
    return files


def _file_entry(root: Path, rel: str, kind: str, rows: int) -> dict[str, Any]:
    return {"path": rel, "kind": kind, "rows": max(0, rows), "sha256": sha256_file(root / rel)}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write_text(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _manifest(
    name: str,
    created_at: str,
    settings: ExportSettings,
    built: Mapping[str, Sequence[ExportRow]],
    stats: Mapping[str, Mapping[str, int]],
    files: list[dict[str, Any]],
    versions: Mapping[str, int],
    provenance: Mapping[str, Any] | None = None,
    warnings: Sequence[str] = (),
    mixes: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    by: dict[str, dict[str, dict[str, int]]] = {d: {} for d in MIX_DIMENSIONS}
    verifiers: Counter[tuple[str, str, str, str]] = Counter()
    reference_fixes: dict[str, dict[str, dict[str, int]]] = {}
    for kind, rows in built.items():
        for dim in MIX_DIMENSIONS:
            counted = Counter(str(r.data[dim]) for r in rows)
            by[dim][kind] = dict(sorted(counted.items(), key=lambda kv: _sort_key(kv[0])))
        verifiers.update(r.verifier for r in rows)
        if SAMPLE_AS.get(kind, kind) == "sft_repair":
            per: dict[str, dict[str, int]] = defaultdict(lambda: {"rows": 0, "reference": 0})
            for r in rows:
                per[r.data["domain"]]["rows"] += 1
                per[r.data["domain"]]["reference"] += r.reference_fix
            reference_fixes[kind] = dict(sorted(per.items()))
    content = {
        "format": MANIFEST_FORMAT,
        "settings": settings.content(),
        "counts": {kind: len(rows) for kind, rows in built.items()},
        "counts_by_domain": by["domain"],
        "counts_by_level": by["level"],
        "counts_by_origin": by["origin"],
        "provenance": dict(provenance or {}),
        "warnings": list(warnings),
        # per kind and dimension: each share asked against what was exported (`draw`)
        "mix": {
            "shares": {
                d: {v: float(x) for v, x in ws.items()}
                for d, ws in mix_shares(settings.mix).items()
            },
            "notes": mix_notes(settings.mix),
            "kinds": {kind: dict(r) for kind, r in (mixes or {}).items()},
        },
        # per repair kind and domain: rows, and how many end with the task's reference
        "reference_fixes": reference_fixes,
        "stats": {kind: dict(s) for kind, s in stats.items()},
        "files": files,
        "lake_versions": dict(versions),
        "verifiers": [
            {
                "domain": d,
                "verifier": v,
                "version": ver,
                "toolchain": json.loads(tc),
                "rows": n,
            }
            for (d, v, ver, tc), n in sorted(verifiers.items())
        ],
        "sql": {
            f"{stem}.sql": hashlib.sha256(db.sql_text(stem).encode()).hexdigest()
            for stem in sorted(_sql_used(settings.kinds))
        },
    }
    # Same lake state + same settings => same id; the name and the time are not content.
    export_id = content_id(canonical_json(content))
    return {"name": name, "export_id": export_id, "created_at": created_at, **content}


def _sort_key(value: str) -> tuple[int, int, str]:
    return (0, int(value), "") if value.isdigit() else (1, 0, value)


def _sql_used(kinds: Iterable[str]) -> set[str]:
    base = {SQL_FILES[k] for k in ("tasks", "coverage", "unproven", "provenance")}
    return {*base, *(SQL_FILES[k] for k in kinds)}


# --- the dataset card -------------------------------------------------------------------------


def _size_category(n: int) -> str:
    for limit, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
    ):
        if n < limit:
            return label
    return "10M<n<100M"


def _yaml_str(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid YAML double-quoted scalar


def _proof_lines(settings: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[str]:
    dropped = sum(int(s.get("unproven_dropped", 0)) for s in manifest.get("stats", {}).values())
    if settings.get("require_proven", True):
        formal = "; ".join(
            f"{d.name}: {d.formal}" for d in domain_registry.domains().values() if d.formal
        )
        return [
            "Where a verifier checks a pass formally against the task's reference "
            f"({formal or 'no domain here has one'}), a pass it could neither prove nor "
            "refute within its limit passed the testbench only, and a testbench misses "
            "what it does not drive (a trojan that fires after 2^32 cycles). Such passes "
            f"are left out by default (`require_proven`): {dropped} rows here. Rows whose "
            "domain has no formal check (or whose task has no reference) are judged by "
            "their tests.",
        ]
    return [
        "`require_proven` is off: passes whose formal equivalence stayed unknown within "
        "its limit (testbench only) are included; `metrics.equivalence` in the lake says "
        "which.",
    ]


def _type_name(t: pa.DataType) -> str:
    if t == MESSAGES:
        return "list of {role, content}"
    if pa.types.is_list(t):
        return f"list of {_type_name(t.value_type)}"
    return {"large_string": "string", "double": "float64"}.get(str(t), str(t))


def pretty_name(manifest: Mapping[str, Any]) -> str:
    """The card's title: the settings' pretty_name, else what it holds (never a time)."""
    given = manifest["settings"].get("pretty_name", "")
    if given:
        return given
    domains = sorted({d for by in manifest["counts_by_domain"].values() for d in by})
    held = ", ".join(domains) if domains else "no rows"
    return f"Crucible execution-verified code ({held}): SFT and DPO"


def _license_lines(settings: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(front matter lines, card lines) for the license."""
    lic = settings.get("license", "")
    if not lic:
        return [], [
            "**No license was chosen for this export.** Choose one before publishing it: "
            "`crucible export --license <Hub license id>` (or `--license other "
            "--license-name <id> --license-link <url>`). The task prompts and reference "
            "solutions come from the task catalog; check its sources' terms.",
        ]
    front = [f"license: {_yaml_str(lic)}"]
    if lic == "other":
        front += [
            f"license_name: {_yaml_str(settings['license_name'])}",
            f"license_link: {_yaml_str(settings['license_link'])}",
        ]
        text = f"`{settings['license_name']}`: {settings['license_link']}"
    else:
        text = f"`{lic}` (the Hub's license id)"
    return front, [f"License: {text}."]


def _count_table(by: Mapping[str, Mapping[str, int]], kinds: Sequence[str], dim: str) -> list[str]:
    values = sorted({v for k in kinds for v in by.get(k, {})}, key=_sort_key)
    if not values:
        return [f"No rows, so no {dim}s."]
    lines = [f"| config | {' | '.join(values)} |", "|---|" + "---:|" * len(values)]
    for kind in kinds:
        lines.append(
            f"| {kind} | " + " | ".join(str(by.get(kind, {}).get(v, 0)) for v in values) + " |"
        )
    return lines


def _provenance_lines(manifest: Mapping[str, Any]) -> list[str]:
    prov = manifest.get("provenance") or {}
    codes = prov.get("codes", [])
    if not codes:
        return ["No rows, so no code to account for."]
    lines = []
    if prov.get("offline_only"):
        lines += [
            "**No code here was written by a model.** The generator was Crucible's offline "
            "channel: every code is a task's reference, a semantics-preserving rewrite of it, "
            "a perturbation of it (mutations that make the bugs models make; the failed "
            "attempts and the rejected answers are these), or an offline repair rebuilt from "
            "the nearest verified variant. The prompts are the ones a model would be sent.",
            "",
        ]
    else:
        lines += [
            "Not every code here comes from Crucible's offline channel (origin `llm`, or a "
            "generator other than the offline channel's: possibly a model); the generator "
            "column below names each one's.",
            "",
        ]
    lines += [
        "Distinct candidates behind the rows, by origin and generator (the part of "
        "`candidates.generator` before `:`, e.g. the operator family):",
        "",
        "| origin | generator | verdict | candidates | origin means |",
        "|---|---|---|---:|---|",
    ]
    for c in codes:
        lines.append(
            f"| {c['origin']} | {c['generator']} | {c['status']} | {c['candidates']} | "
            f"{ORIGIN_DOCS.get(c['origin'], '')} |"
        )
    return lines


def _gate_lines(manifest: Mapping[str, Any]) -> list[str]:
    prov = manifest.get("provenance") or {}
    registry = prov.get("registry_gates", {})
    ran = prov.get("gates", {})
    if not registry:
        return ["No rows, so no verdicts."]
    lines = [
        "A code is *verified* when its verdict's status is `pass`: every gate that ran let it "
        "through, in order, stopping at the first failure. The gates each domain's verifier "
        "has (its registry descriptor), with their stage:",
        "",
    ]
    for d, gates in sorted(registry.items()):
        lines.append(f"- {d}: " + ", ".join(f"`{g}` ({st})" for g, st in gates))
    lines += [
        "",
        "The gates the rows' passing verdicts ran (a verdict made with `--gates` or `--fast` "
        "ran fewer, and passed only those):",
        "",
        "| domain | gates run, in order | passing verdicts | all of the domain's gates |",
        "|---|---|---:|---|",
    ]
    for d, entries in sorted(ran.items()):
        full = [g for g, _ in registry.get(d, [])]
        for e in entries:
            complete = (
                "yes"
                if set(full) <= set(e["gates"])
                else ("no: not run: " + ", ".join(g for g in full if g not in e["gates"]))
            )
            lines.append(f"| {d} | {', '.join(e['gates'])} | {e['verdicts']} | {complete} |")
    if "dpo" in manifest["counts"]:
        lines += [
            "",
            "DPO's `rejected` answers failed: "
            + (
                "any failure but an infrastructure error, those that compiled first "
                "(`dpo_other_failures`)."
                if manifest["settings"].get("dpo_other_failures")
                else "only failures whose `build`-stage gates all passed (they compiled)."
            ),
        ]
    return lines


def _mix_lines(manifest: Mapping[str, Any]) -> list[str]:
    settings = manifest["settings"]
    mix = manifest.get("mix") or {}
    size = settings["size"] if settings["size"] is not None else "all"
    if not mix.get("shares"):
        return [
            f"No mix: every eligible row, or with a size a uniform seeded draw of that many "
            f"per config; size per config: {size}; seed: {settings['seed']}."
        ]
    lines = [
        f"Mix, as target shares of each config's rows per dimension: "
        f"`{json.dumps(settings['mix'])}`; size per config: {size}; seed: "
        f"{settings['seed']}. A dimension that names shares gives the values it does not "
        f"name none, unless `*` gives them a share together. A share is met up to the "
        "eligible rows of its value and never filled with other values"
        + (
            "; with no size, a config is the largest at which every share is met."
            if settings["size"] is None
            else "."
        ),
        *(f"- {n}" for n in mix.get("notes", [])),
        "",
        "| config | dimension | value | asked share | target rows | eligible | exported | "
        "exported share |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    none = [k for k, r in mix.get("kinds", {}).items() if not r.get("eligible")]
    for kind, report in mix.get("kinds", {}).items():
        if kind in none:
            continue
        for dim, entries in report["dimensions"].items():
            for e in entries:
                value = e["value"] if e["named"] else f"{e['value']} (not named)"
                lines.append(
                    f"| {kind} | {dim} | {value} | {e['asked']:.4g} | {e['target']} | "
                    f"{e['eligible']} | {e['exported']} | {e['share']:.4g} |"
                )
    if none:
        lines += ["", f"No eligible rows to mix: {', '.join(f'`{k}`' for k in none)}."]
    return lines


def _reference_fix_lines(manifest: Mapping[str, Any]) -> list[str]:
    """How many repair fixes are the task's reference itself, per domain."""
    fixes = manifest["reference_fixes"]
    kind = "sft_repair" if "sft_repair" in fixes else next(iter(fixes))
    per = fixes[kind]
    rows = sum(d["rows"] for d in per.values())
    ref = sum(d["reference"] for d in per.values())
    dropped = manifest.get("stats", {}).get(kind, {}).get("reference_fixes_dropped", 0)
    lines = [
        f"Of the {rows} repair rows (`{kind}`"
        + (", the same rows in `sft_repair_completion`" if len(fixes) > 1 else "")
        + f"), {ref} end with a fix that is the task's reference solution itself (the same "
        "code once comments and whitespace are folded, as the dedup's exact key folds "
        "them). Offline repair rebuilds a fix from the nearest verified variant, which is "
        "mostly the reference: such a row teaches to answer with the reference, not a fix "
        "of the failed attempt's own code.",
        "",
    ]
    if manifest["settings"].get("reference_fixes", True):
        lines.append("They are included; `crucible export --no-reference-fixes` leaves them out.")
    else:
        lines.append(
            f"Rows with such a fix were left out (`reference_fixes` off, "
            f"`--no-reference-fixes`): {dropped} before the near-duplicate filter."
        )
    if per:
        lines += ["", "| domain | repair rows | fix = reference | share |", "|---|---:|---:|---:|"]
        for domain, d in per.items():
            share = d["reference"] / d["rows"] if d["rows"] else 0.0
            lines.append(f"| {domain} | {d['rows']} | {d['reference']} | {share:.2f} |")
    return lines


def _schema_lines(kinds: Sequence[str]) -> list[str]:
    lines: list[str] = []
    for kind in kinds:
        docs = {**COLUMN_DOCS, **KIND_COLUMNS.get(kind, {})}
        lines += [f"### `{kind}`", "", "| column | type | meaning |", "|---|---|---|"]
        for f in SCHEMAS[kind]:
            lines.append(f"| `{f.name}` | {_type_name(f.type)} | {docs.get(f.name, '')} |")
        lines.append("")
    return lines


def _empty_lines(empty: Sequence[str]) -> list[str]:
    if not empty:
        return []
    names = ", ".join(f"`{k}`" for k in empty)
    return [
        "",
        f"No rows this time: {names}. Such a kind is written as one Parquet file with its "
        "schema and no row group (`data/<kind>/`), but not declared as a config: `datasets` "
        '(up to 5.2 at least) refuses to load a split of 0 rows (`Instruction "train" '
        "corresponds to no data`, huggingface/datasets#8401), so every declared config loads.",
    ]


def dataset_card(manifest: Mapping[str, Any]) -> str:
    """README.md: YAML front matter (license, categories, one config per kind) + the card."""
    kinds = list(manifest["counts"])
    domains = sorted({d for by in manifest["counts_by_domain"].values() for d in by})
    total = sum(manifest["counts"].values())
    settings = manifest["settings"]
    title = pretty_name(manifest)
    license_front, license_body = _license_lines(settings)
    front = [
        "---",
        f"pretty_name: {_yaml_str(title)}",
        *license_front,
        "language:",
        "- en",
        "task_categories:",
        "- text-generation",
        "tags:",
        "- code",
        "- execution-verified",
        "- trl",
        *(f"- {_yaml_str(d)}" for d in domains),
        "size_categories:",
        f"- {_yaml_str(_size_category(total))}",
        "configs:",
    ]
    # datasets (up to 5.2 at least) cannot load a split of 0 rows (`Instruction "train"
    # corresponds to no data`, huggingface/datasets#8401): an empty kind is not declared,
    # so every config a user lists with get_dataset_config_names loads
    loadable = [k for k in kinds if manifest["counts"][k]]
    for kind in loadable:
        front += [
            f"- config_name: {kind}",
            "  data_files:",
            "  - split: train",
            f"    path: {_yaml_str(f'data/{kind}/train-*.parquet')}",
        ]
    front.append("---")

    body = [
        f"# {title}",
        "",
        "Execution-verified training data for industrial code, exported from a Crucible lake "
        f"as `{manifest['name']}` on {manifest['created_at']} (export id "
        f"`{manifest['export_id']}`). Every code answer a row teaches passed the domain's "
        "verifier; only dedup keepers of train tasks are subjects, never holdout tasks, "
        "contaminated candidates, or candidates judged only by an infrastructure error.",
        "",
        f"![Rows per config by domain, level and origin]({CHART})",
        "",
        "## Configs: what each trains on",
        "",
        "| config | rows | TRL format | what the loss covers |",
        "|---|---:|---|---|",
    ]
    for kind in kinds:
        fmt, loss = TRAINS_ON[kind]
        body.append(f"| `{kind}` | {manifest['counts'][kind]} | {fmt} | {loss} |")
    body += ["", *(f"- `{kind}`: {KIND_DOCS[kind]}" for kind in kinds), ""]
    body += ["## How the rows were produced", "", *_provenance_lines(manifest), ""]
    body += ["## What verified means", "", *_gate_lines(manifest), ""]
    body += ["## Proven or tested", "", *_proof_lines(settings, manifest), ""]
    if manifest.get("reference_fixes"):
        body += ["## Repair fixes equal to the reference", "", *_reference_fix_lines(manifest)]
        body.append("")
    body += ["## Schema", "", *_schema_lines(kinds)]
    body += ["## Rows", "", "| kind | " + " | ".join(domains) + " | total |"]
    body.append("|---|" + "---:|" * (len(domains) + 1))
    for kind in kinds:
        by = manifest["counts_by_domain"][kind]
        cells = [str(by.get(d, 0)) for d in domains]
        body.append(f"| {kind} | " + " | ".join(cells) + f" | {manifest['counts'][kind]} |")
    for dim in ("level", "origin"):
        body += ["", f"By {dim}:", "", *_count_table(manifest[f"counts_by_{dim}"], kinds, dim)]
    body += [
        "",
        "## Mix and sampling",
        "",
        *_mix_lines(manifest),
    ]
    if manifest.get("warnings"):
        body += ["", "Warnings:", "", *(f"- {w}" for w in manifest["warnings"])]
    body += [
        "",
        "## Verification",
        "",
        "| domain | verifier | version | toolchain | rows |",
        "|---|---|---|---|---:|",
    ]
    for v in manifest["verifiers"]:
        tools = ", ".join(f"{k} {val}" for k, val in sorted(v["toolchain"].items())) or "-"
        body.append(f"| {v['domain']} | {v['verifier']} | {v['version']} | {tools} | {v['rows']} |")
    lake = ", ".join(f"{t} v{n}" for t, n in sorted(manifest["lake_versions"].items()))
    body += [
        "",
        f"Lake table versions read (Delta): {lake}. `manifest.json` holds the settings, these "
        "versions, the SQL that selected the rows (with hashes) and the sha256 of every data "
        "file.",
        "",
        "## License",
        "",
        *license_body,
        "",
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'ds = load_dataset("path/to/{manifest["name"]}", "{(loadable or kinds)[0]}", '
        'split="train")',
        "```",
        "",
        "The same rows are in `jsonl/<kind>.jsonl`.",
        *_empty_lines([k for k in kinds if k not in loadable]),
        "",
    ]
    return "\n".join(front) + "\n\n" + "\n".join(body)


def write_chart(manifest: Mapping[str, Any], path: Path) -> None:
    """counts.png: rows per config, by domain, by level and by origin."""
    path.write_bytes(chart_png(chart_spec(manifest)))


def chart_spec(manifest: Mapping[str, Any]) -> str:
    """Everything the chart shows, as canonical JSON (the configs in the manifest's
    order: it is the legend's): `chart_png` reads nothing else, so equal specs draw
    equal pictures."""
    kinds = list(manifest["counts"])
    return json.dumps(
        {
            "kinds": kinds,
            "by": {
                dim: {k: manifest[f"counts_by_{dim}"].get(k, {}) for k in kinds}
                for dim in MIX_DIMENSIONS
            },
            "title": f"{pretty_name(manifest)}: {sum(manifest['counts'].values())} rows "
            f"in {len(kinds)} configs",
        },
        sort_keys=True,
    )


@functools.lru_cache(maxsize=32)
def chart_png(spec: str) -> bytes:
    """The PNG of a `chart_spec` (bars, Agg backend; no pyplot, so no global backend is
    set for the process). Drawing is most of a small export's time (~0.4 s), so the
    process keeps its last pictures by spec: an export of unchanged counts (a rerun, a
    second format of one lake) reuses the bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    d = json.loads(spec)
    kinds = d["kinds"]
    fig = Figure(figsize=(13, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(MIX_DIMENSIONS))
    width = 0.8 / max(1, len(kinds))
    for ax, dim in zip(axes, MIX_DIMENSIONS, strict=True):
        by = d["by"][dim]
        values = sorted({v for k in kinds for v in by[k]}, key=_sort_key)
        for i, kind in enumerate(kinds):
            xs = [j + (i - (len(kinds) - 1) / 2) * width for j in range(len(values))]
            ax.bar(xs, [by[kind].get(v, 0) for v in values], width, label=kind)
        ax.set_xticks(range(len(values)), values)
        ax.set_title(f"rows by {dim}")
        ax.set_xlabel(dim)
        ax.set_ylabel("rows")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if not values:
            ax.text(0.5, 0.5, "no rows", ha="center", va="center", transform=ax.transAxes)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=len(kinds))
    fig.suptitle(d["title"])
    out = io.BytesIO()
    fig.savefig(out, format="png", metadata={"Software": None})
    return out.getvalue()
