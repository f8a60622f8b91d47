"""The test session is an entry point: keep Ray and Prefect quiet and self-contained
(set before either is imported by a test module)."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Prefect logs "Stopping temporary server" at exit, after pytest has closed the streams
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="crucible-test-prefect-"))
# a busy CI machine can take longer than Prefect's 20 s to start its ephemeral server
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
# kernel verifiers: a private compile cache per test session, and never a GPU path in tests
os.environ.setdefault("CRUCIBLE_KERNEL_CACHE", tempfile.mkdtemp(prefix="crucible-test-kcache-"))
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="crucible-test-triton-"))
