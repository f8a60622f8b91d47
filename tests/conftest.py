"""The test session is an entry point: keep Ray and Prefect quiet and self-contained
(set before either is imported by a test module)."""

from __future__ import annotations

import atexit
import os
import tempfile

# Everything the session writes to the temp dir (worker dirs of verifiers that Ray's
# shutdown kills before they close, Prefect's home, caches) goes under one dir, removed
# when the session ends: the suite leaves no scratch of ours behind.
SESSION_TMP = tempfile.mkdtemp(prefix="crucible-tests-")
os.chmod(SESSION_TMP, 0o755)
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
# kernel verifiers: a private compile cache per test session (the nvcc cache's default,
# KernelSettings.cache_dir unset, is under XDG_CACHE_HOME), and never a GPU path in tests
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="crucible-test-cache-")
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="crucible-test-triton-"))


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
