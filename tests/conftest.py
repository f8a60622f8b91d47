"""The test session is an entry point: keep Ray and Prefect quiet and self-contained
(set before either is imported by a test module)."""

from __future__ import annotations

import atexit
import os
import tempfile

# Everything the session writes to the temp dir (worker dirs of verifiers that Ray's
# shutdown kills before they close, Prefect's home, caches) goes under one dir, removed
# when the session ends: the suite leaves no scratch of ours behind.
# Under pytest-xdist (`make test` runs two workers) the controller makes that dir and each
# worker one of its own inside it, named by its id (gw0, gw1): short, since Ray's socket
# paths below a session dir may not pass 107 bytes, and a worker never shares the
# controller's Prefect home (two ephemeral servers on one SQLite file lock each other out).
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
OUTER_TMP = os.environ.get("CRUCIBLE_TESTS_TMP", "")
if WORKER and OUTER_TMP:
    SESSION_TMP = os.path.join(OUTER_TMP, WORKER)
    os.makedirs(SESSION_TMP, mode=0o755, exist_ok=True)
    if os.environ.get("PREFECT_HOME", "").startswith(OUTER_TMP + os.sep):
        del os.environ["PREFECT_HOME"]  # the controller's: this worker makes its own below
else:
    SESSION_TMP = tempfile.mkdtemp(prefix="crucible-tests-")
    os.chmod(SESSION_TMP, 0o755)
    os.environ["CRUCIBLE_TESTS_TMP"] = SESSION_TMP
os.environ["TMPDIR"] = SESSION_TMP
tempfile.tempdir = None  # this process's own tempfile calls follow TMPDIR too

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Prefect logs "Stopping temporary server" at exit, after pytest has closed the streams
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="crucible-test-prefect-"))
# a busy CI machine can take longer than Prefect's 20 s to start its ephemeral server
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
# The host caches (nvcc cubins, x86asm and firmware builds, RTL port lists: all under
# XDG_CACHE_HOME, sealed, written atomically): private to the test session, and shared by
# its xdist workers, so a build one worker made is a hit for the other (a test of a
# cache's own behaviour gives it a dir of its own)
if not (WORKER and os.environ.get("XDG_CACHE_HOME", "").startswith(OUTER_TMP + os.sep)):
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="crucible-test-cache-")
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="crucible-test-triton-"))


# Ray and Prefect shared by the session (`harness`, `local_ray`, `own_ray`)
pytest_plugins = ("tests.sessionfixtures",)


def _remove_session_tmp() -> None:
    import shutil

    shutil.rmtree(SESSION_TMP, ignore_errors=True)


# registered before Prefect's test harness registers its own cleanup, so it runs after it
atexit.register(_remove_session_tmp)


def pytest_sessionfinish(session, exitstatus):
    left = sorted(os.listdir(SESSION_TMP)) if os.path.isdir(SESSION_TMP) else []
    workers = [n for n in left if n.startswith(("crucible-cadworker", "crucible-kworker"))]
    if workers:  # closed verifiers remove theirs; these are of actors Ray killed
        print(f"\n{len(workers)} worker dirs of killed verifier actors are removed at exit")


# --- the budget: a test over 30 s says why in its docstring -------------------------------
# (reported, never failed on: a timing assert on a shared machine is a coin toss)
SLOW_S = 30.0
_spent: dict[str, float] = {}
_reasons: dict[str, bool] = {}


def _has_reason(item) -> bool:
    fn = getattr(item, "function", None)
    return bool(fn is not None and (fn.__doc__ or "").strip())


def pytest_runtest_makereport(item, call):
    # workers send reports, not items, to xdist's controller: the docstring rides along
    if call.when == "setup":
        item.user_properties.append(("crucible_reason", _has_reason(item)))


def pytest_runtest_logreport(report):
    _spent[report.nodeid] = _spent.get(report.nodeid, 0.0) + report.duration
    for key, value in report.user_properties:
        if key == "crucible_reason":
            _reasons[report.nodeid] = bool(value)


def pytest_terminal_summary(terminalreporter):
    slow = sorted(((s, n) for n, s in _spent.items() if s > SLOW_S), reverse=True)
    if not slow:
        return
    tr = terminalreporter
    tr.section(f"tests over {SLOW_S:.0f} s (set-up included)")
    for s, n in slow:
        why = "" if _reasons.get(n, True) else "   <- no reason in its docstring"
        tr.write_line(f"{s:7.1f} s  {n}{why}")


# --- the order: longest files first (tests/durations.py), so no long file starts last ------
def pytest_collection_modifyitems(session, config, items):
    from tests.durations import load

    seconds = load()
    if seconds:  # a stable sort: each file's tests stay together and in their order
        items.sort(key=lambda item: -seconds.get(item.nodeid.split("::", 1)[0], 0.0))
