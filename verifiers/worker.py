"""A verifier as a plain process: JSONL in, JSONL out, stdlib only.

Each input line is `{"task": Task.to_dict(), "candidate": Candidate.to_dict(), "limits":
Limits.to_dict() (optional)}`; each output line is the `Verdict.to_dict()` of one input
line. An empty line ends a batch (what is pending is verified then, not at `--batch` lines
or EOF), so a long-lived worker on a pipe is fed batch after batch. This is how a GPU,
emulator or EDA node without Ray, Prefect or the lake runs verification:
`python -m verifiers.<domain> < in.jsonl > out.jsonl`.

Nothing lost: a verdict is written (one whole line, flushed) the moment it completes, so
lines come out in completion order (each names its `candidate_id`; `--ordered` keeps input
order within a batch instead, holding a verdict until the earlier lines have theirs).
With `--out FILE` that exists, the worker resumes: the verdicts already in it stand (a
partial last line, left by a kill, is cut off), the input lines they answer (same
candidate, same verifier and version) are skipped, and the new verdicts are appended;
`--fresh` overwrites the file instead.

Nothing left behind: on exit, also on SIGTERM and SIGINT, the verifier's warm workers are
stopped and their dirs removed; a verdict finished after the signal is not written (its
worker may have been killed under it). A second signal does not cut that short. A
process killed with SIGKILL cannot clean up: the next one sweeps what it left
(`verifiers.warm.sweep_stale`).

The verifier's settings (`verifiers.settings`, the domain's settings class) come from
`--settings JSON` and from one flag per settings field (`--workers 1`, generated from the
class, so `--help` lists the domain's own); a flag wins over the same key in the JSON.

A malformed line is reported on stderr with its line number and skipped; the rest still
run, and the exit status is 1 if any line was skipped.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from verifiers.base import Verifier
from verifiers.contract import Candidate, Limits, Task, Verdict
from verifiers.registry import VerifierUnavailable, close_all, get_verifier, verify
from verifiers.settings import SettingsError, VerifierSettings, settings_class, settings_for

log = logging.getLogger(__name__)

# a stopping run closes the verifier this often until its batch thread is done
ABORT_RECLOSE_S = 0.2

# candidate_id -> the (verifier, verifier_version) pairs that already answered it
Answered = Mapping[str, set[tuple[str, str]]]
Pending = tuple[int, Task, Candidate, Limits | None]


def _parse(domain: str, raw: str) -> tuple[Task, Candidate, Limits | None]:
    item = json.loads(raw)
    if not isinstance(item, dict) or "task" not in item or "candidate" not in item:
        raise ValueError('expected an object with "task" and "candidate"')
    task = Task.from_dict(item["task"])
    cand = Candidate.from_dict(item["candidate"])
    if task.domain != domain:
        raise ValueError(f"task {task.name!r} is for domain {task.domain!r}, not {domain!r}")
    if cand.task_id != task.task_id:
        raise ValueError(f"candidate {cand.candidate_id[:12]} is for another task")
    limits = Limits.from_dict(item["limits"]) if item.get("limits") else None
    return task, cand, limits


def run(
    domain: str,
    lines: Iterable[str],
    out: IO[str],
    err: IO[str],
    *,
    batch: int = 1,
    override: dict | None = None,
    settings: VerifierSettings | Mapping[str, Any] | None = None,
    ordered: bool = False,
    answered: Answered | None = None,
) -> int:
    """Verify every line; returns the number of lines that gave no verdict.

    Lines are verified `batch` at a time through the verifier's `verify_many` (the GPU
    verifiers compile a batch in parallel); each verdict is written as it completes
    (`ordered`: in input order within the batch). A line `answered` already (its candidate
    by this verifier and version) is skipped.
    """
    writer = _Writer(out, err, ordered)
    batches = _Batches(domain, settings, writer)
    bad = skipped = 0
    pending: list[Pending] = []
    try:
        for n, raw in enumerate(lines, start=1):
            if not raw.strip():
                # an empty line ends a batch: a long-lived worker fed through a pipe (the
                # container backend) has its pending lines verified now, not at EOF
                if pending:
                    bad += batches.verify(pending)
                    pending = []
                continue
            try:
                task, cand, limits = _parse(domain, raw)
            except (ValueError, TypeError, KeyError) as e:  # JSONDecodeError: a ValueError
                bad += 1
                writer.say(f"line {n}: skipped, malformed: {type(e).__name__}: {str(e)[:300]}")
                continue
            if override:
                limits = Limits.from_dict({**(limits or Limits()).to_dict(), **override})
            if answered is not None and batches.answered(answered, cand, limits):
                skipped += 1
                continue
            pending.append((n, task, cand, limits))
            if len(pending) >= batch:
                bad += batches.verify(pending)
                pending = []
        if pending:
            bad += batches.verify(pending)
    except BaseException:
        batches.abort()
        raise
    finally:
        batches.shutdown()
    if answered is not None:
        writer.say(f"resumed: {skipped} line(s) already answered in the output, skipped")
    return bad


class _Writer:
    """Verdict lines out, from any thread: each whole and flushed as it is written, none
    once closed. Keeps the batch's lines that wait for a verdict; `ordered`, a verdict
    waits until every earlier line of its batch has its own (or has none)."""

    def __init__(self, out: IO[str], err: IO[str], ordered: bool):
        self.out, self.err, self.ordered = out, err, ordered
        self._lock = threading.Lock()
        self._closed = False
        self._lines: list[int] = []  # the batch's input line numbers, in input order
        self._waiting: dict[Hashable, list[int]] = {}  # item key -> positions unanswered
        self._held: dict[int, str | None] = {}  # ordered: answered lines not yet written
        self._next = 0  # ordered: the first position not yet written
        self.lost = 0  # lines of this batch that got no verdict

    def say(self, text: str) -> None:
        with self._lock:
            self.err.write(text + "\n")
            self.err.flush()

    def close(self) -> None:
        """No verdict is written after this (but the line being written, whole): one that
        finished while the run stops may be its killed worker's doing, not the
        candidate's. No lock: the main thread calls it from a signal, maybe in `say`."""
        self._closed = True

    def begin(self, keys: Sequence[tuple[int, Hashable]]) -> None:
        """A new batch: (input line number, item key) per line, in input order."""
        with self._lock:
            self._lines = [n for n, _ in keys]
            self._waiting = {}
            for pos, (_, key) in enumerate(keys):
                self._waiting.setdefault(key, []).append(pos)
            self._held, self._next, self.lost = {}, 0, 0

    def answer(self, key: Hashable, verdict: Verdict) -> None:
        """The verdict of a line with this key still waiting for one (else nothing)."""
        line = json.dumps(verdict.to_dict(), ensure_ascii=False) + "\n"
        with self._lock:
            positions = self._waiting.get(key)
            if not positions:
                return
            self._settle(positions.pop(0), line)

    def give_up(self, key: Hashable, why: str) -> None:
        """Every line with this key still waiting gets no verdict; stderr says why."""
        with self._lock:
            for pos in self._waiting.pop(key, []):
                self.lost += 1
                if not self._closed:
                    self.err.write(f"line {self._lines[pos]}: no verdict, {why}\n")
                    self.err.flush()
                self._settle(pos, None)

    def _settle(self, pos: int, line: str | None) -> None:
        if not self.ordered:
            self._write(line)
            return
        self._held[pos] = line
        while self._next in self._held:
            self._write(self._held.pop(self._next))
            self._next += 1

    def _write(self, line: str | None) -> None:
        if line is not None and not self._closed:
            self.out.write(line)
            self.out.flush()


class _Stopped(Exception):
    """The run is stopping: a candidate not yet begun is not verified."""


class _Batches:
    """Batches verified by the domain's own `verify_many` (its pool, its parallelism, its
    warm-up) on a thread of their own, so the main thread stays free to take a signal."""

    def __init__(
        self,
        domain: str,
        settings: VerifierSettings | Mapping[str, Any] | None,
        writer: _Writer,
    ):
        self.domain, self.settings, self.writer = domain, settings, writer
        self._stop = threading.Event()
        # one thread for the whole run: a process it starts may die with it (bwrap
        # --die-with-parent is the starting thread's), never between two batches
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="verify")
        # clear while the batch thread is inside a batch: it clears this itself, before its
        # first stop check, so a stop either finds it clear or is seen by that check (a
        # future stored by the submitting thread could be stored after a signal's stop)
        self._idle = threading.Event()
        self._idle.set()
        self._verifier: Verifier | None = None
        self._unavailable = False
        self._versions: dict[str, tuple[str, str] | None] = {}

    def verifier(self) -> Verifier | None:
        """The domain's verifier (None: not importable here, its verdicts `infra_error`)."""
        if self._verifier is None and not self._unavailable:
            try:
                self._verifier = get_verifier(self.domain, self.settings)
            except VerifierUnavailable:
                self._unavailable = True
        return self._verifier

    def answered(self, answered: Answered, cand: Candidate, limits: Limits | None) -> bool:
        """Whether the output already holds this candidate's verdict by this verifier and
        version (without a verifier here: by any)."""
        given = answered.get(cand.candidate_id)
        if not given:
            return False
        key = _limits_key(limits)
        if key not in self._versions:
            v = self.verifier()
            self._versions[key] = (v.name, v.version_for(limits)) if v else None
        want = self._versions[key]
        return want is None or want in given

    def verify(self, pending: Sequence[Pending]) -> int:
        """Verify one batch; returns the number of its lines that got no verdict."""
        fut = self._thread.submit(self._verify, list(pending))
        # waited for in short steps: a signal the kernel gave another thread only runs its
        # Python handler when the main thread runs bytecode, never while it blocks on a lock
        while True:
            try:
                return fut.result(timeout=0.2)
            except concurrent.futures.TimeoutError:
                continue

    def _verify(self, pending: list[Pending]) -> int:
        self._idle.clear()
        try:
            return self._verify_groups(pending)
        finally:
            self._idle.set()

    def _verify_groups(self, pending: list[Pending]) -> int:
        # one call per distinct Limits (usually one): verify_many takes a single Limits
        groups: dict[str, list[int]] = {}
        for pos, item in enumerate(pending):
            groups.setdefault(_limits_key(item[3]), []).append(pos)
        group_of = {pos: g for g, poss in enumerate(groups.values()) for pos in poss}
        # a line's key: its group and (task, code), what `verify` is called with
        self.writer.begin(
            [(n, (group_of[pos], t.task_id, c.code)) for pos, (n, t, c, _) in enumerate(pending)]
        )
        for g, poss in enumerate(groups.values()):
            if self._stop.is_set():
                break
            self._verify_group(g, [pending[pos] for pos in poss])
        return self.writer.lost

    def _verify_group(self, g: int, items: list[Pending]) -> None:
        limits = items[0][3]
        keys = [(g, t.task_id, c.code) for _, t, c, _ in items]
        pairs = [(t, c.code) for _, t, c, _ in items]
        verifier = self.verifier()
        try:
            if verifier is None:  # an infra_error verdict each, at once
                for key, (task, code) in zip(keys, pairs, strict=True):
                    self.writer.answer(key, verify(task, code, limits, self.settings))
                return
            with _streaming(verifier, self._emitter(g), self._stop):
                got = verifier.verify_many(pairs, limits)
            # a verdict the domain made without its verify() (nothing, usually)
            for key, verdict in zip(keys, got, strict=True):
                self.writer.answer(key, verdict)
        except _Stopped:
            return
        except Exception as e:  # a verifier bug must not sink the rest of the batch
            if self._stop.is_set():
                return
            log.exception("the %s verifier crashed on a batch", self.domain)
            for key in keys:
                self.writer.give_up(key, f"the verifier crashed: {type(e).__name__}: {e}")

    def _emitter(self, g: int) -> Callable[[Task, Any, Verdict], None]:
        def emit(task: Task, code: Any, verdict: Verdict) -> None:
            self.writer.answer((g, task.task_id, code), verdict)

        return emit

    def abort(self) -> None:
        """Stop now: nothing more is written or begun; the warm workers are stopped (what
        they ran ends at once), and stopped again until the candidates in flight are done
        and once after: one past its stop check may make a pool or start a worker after a
        close, and what runs there must not run to its own timeout."""
        self._stop.set()
        self.writer.close()
        if self._idle.is_set():  # no batch begun: one that begins now sees the stop
            return
        while not self._idle.is_set():
            self._close_verifier()
            self._idle.wait(ABORT_RECLOSE_S)
        self._close_verifier()

    def shutdown(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)

    def _close_verifier(self) -> None:
        close = getattr(self._verifier, "close", None)
        if close is not None:
            close()


@contextlib.contextmanager
def _streaming(
    verifier: Verifier, emit: Callable[[Task, Any, Verdict], None], stop: threading.Event
) -> Iterator[None]:
    """`verifier.verify`, meanwhile, also hands each verdict to `emit` as it completes:
    every domain's `verify_many` verifies through `self.verify`, so the batch runs as the
    domain runs it (its pool, its parallelism) and still streams. Once `stop` is set, a
    candidate not yet begun raises `_Stopped` instead."""
    real = verifier.verify

    def verify_and_emit(task: Task, code: Any, limits: Limits | None = None) -> Verdict:
        if stop.is_set():
            raise _Stopped
        verdict = real(task, code, limits)
        emit(task, code, verdict)
        return verdict

    verifier.verify = verify_and_emit  # the instance's, shadowing the class's method
    try:
        yield
    finally:
        del verifier.verify


def _limits_key(limits: Limits | None) -> str:
    return json.dumps(limits.to_dict() if limits else None, sort_keys=True)


def read_answered(path: Path) -> dict[str, set[tuple[str, str]]]:
    """The verdicts already in an output file, by candidate: (verifier, version) pairs. A
    last line without its newline (the worker was killed while writing it) is cut off
    the file; any other line that is not a verdict is a `ValueError`."""
    answered: dict[str, set[tuple[str, str]]] = {}
    with path.open("r+b") as f:
        end = 0  # the offset after the last whole line
        for n, raw in enumerate(f, start=1):
            if not raw.endswith(b"\n"):
                break
            end += len(raw)
            if not raw.strip():
                continue
            try:
                d = json.loads(raw)
                key = (d["candidate_id"], (d["verifier"], d["verifier_version"]))
            except (ValueError, TypeError, KeyError):
                raise ValueError(
                    f"{path}:{n} is not a verdict line: pass --fresh to overwrite the file, "
                    "or another --out"
                ) from None
            answered.setdefault(key[0], set()).add(key[1])
        f.truncate(end)
    return answered


class _Signals:
    """SIGTERM and SIGINT raise (SystemExit, KeyboardInterrupt) in the main thread, so the
    `finally` that stops the warm workers and removes their dirs runs. Once one has been
    raised, or `hold()` says cleanup began, later ones are only noted: cleanup is never
    cut short. A signal the caller ignores (a job started with `&`) stays ignored."""

    def __init__(self) -> None:
        self.held = False
        self.caught: list[int] = []
        self._old: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    self._old[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)

    def hold(self) -> None:
        self.held = True

    def _on_signal(self, signum: int, frame: object) -> None:
        self.caught.append(signum)
        if self.held:
            return
        self.held = True  # before raising: a second one while unwinding is only noted
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)


def main(domain: str, argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m verifiers.{domain}",
        description=f"Verify {domain} candidates: JSONL (task, candidate, limits) in, "
        "JSONL verdicts out, one line per verdict as it completes (completion order: each "
        "names its candidate_id). With --out FILE that exists, resumes: the lines it "
        "answers already are skipped, the new verdicts appended. SIGTERM or SIGINT stop "
        "the warm workers and remove their dirs.",
    )
    parser.add_argument("input", nargs="?", help="input JSONL file (default: stdin)")
    parser.add_argument(
        "--out",
        help="output JSONL file (default: stdout); one that exists is resumed (a partial "
        "last line cut off), unless --fresh",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="overwrite --out instead of resuming it"
    )
    parser.add_argument(
        "--ordered",
        action="store_true",
        help="verdicts in input order within a batch (each waits for the earlier ones: a "
        "kill loses those held)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=32,
        help="lines verified together (GPU verifiers compile a batch in parallel)",
    )
    parser.add_argument(
        "--unconfined",
        action="store_true",
        help="run candidates WITHOUT the bubblewrap sandbox (rlimits only). Unsafe: only "
        "where bubblewrap cannot run and the node is disposable",
    )
    parser.add_argument(
        "--settings",
        metavar="JSON",
        help="the verifier's settings as a JSON object (or a .json file); the flags "
        "below set single keys",
    )
    flags = _settings_flags(parser, domain)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        settings = parse_settings(domain, args.settings, {k: getattr(args, k) for k in flags})
    except SettingsError as e:
        parser.error(str(e))
    override = {"unconfined": True} if args.unconfined else None
    answered = None
    if args.out and not args.fresh and os.path.isfile(args.out):
        try:
            answered = read_answered(Path(args.out))
        except (OSError, ValueError) as e:
            parser.error(str(e))
    src = open(args.input, encoding="utf-8") if args.input else sys.stdin  # noqa: SIM115
    mode = "a" if answered is not None else "w"
    dst = open(args.out, mode, encoding="utf-8") if args.out else sys.stdout  # noqa: SIM115
    bad = 0
    with _Signals() as signals:
        try:
            try:
                bad = run(
                    domain,
                    src,
                    dst,
                    sys.stderr,
                    batch=max(1, args.batch),
                    override=override,
                    settings=settings,
                    ordered=args.ordered,
                    answered=answered,
                )
            finally:
                try:
                    signals.hold()  # a signal from here on waits for the dirs to go
                finally:
                    close_all()  # warm workers and their dirs go with the process
                    if args.input:
                        src.close()
                    if args.out:
                        dst.close()
        except (KeyboardInterrupt, SystemExit):
            if not signals.caught:
                raise
    if signals.caught:
        name = signal.Signals(signals.caught[0]).name
        resume = f"; rerun with --out {args.out} to resume" if args.out else ""
        sys.stderr.write(f"stopped by {name}: warm workers stopped, their dirs removed{resume}\n")
        return 128 + signals.caught[0]
    return 1 if bad else 0


def _settings_flags(parser: argparse.ArgumentParser, domain: str) -> list[str]:
    """One flag per field of the domain's settings class; the attribute names parsed."""
    cls = settings_class(domain)
    fields = cls.describe()
    if not fields:
        return []
    group = parser.add_argument_group(f"{domain} verifier settings (override --settings)")
    for name, kind, default, text in fields:
        flag = "--" + name.replace("_", "-")
        shown = f" [default: {json.dumps(default)}]" if default not in (None, False) else ""
        if kind is bool:
            # --name / --no-name; absent: not given (the JSON's value or the default)
            group.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=None, help=text + shown
            )
        else:
            group.add_argument(flag, type=kind, default=None, help=text + shown)
    return [name for name, *_ in fields]


def parse_settings(
    domain: str, text: str | None, flags: Mapping[str, Any] | None = None
) -> VerifierSettings:
    """The domain's settings from `--settings` (JSON text or a .json file) and the flags
    given (None: not given); unknown keys and wrong types raise SettingsError."""
    given: Any = {}
    if text:
        try:
            raw = Path(text).read_text(encoding="utf-8") if text.endswith(".json") else text
            given = json.loads(raw)
        except (OSError, ValueError) as e:
            raise SettingsError(f"--settings: not JSON or a readable .json file: {e}") from None
        if not isinstance(given, dict):
            raise SettingsError("--settings must be a JSON object")
    given = {**given, **{k: v for k, v in (flags or {}).items() if v is not None}}
    return settings_for(domain, given)
