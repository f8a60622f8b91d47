"""The pipeline tests: Ray and Prefect come from tests/sessionfixtures.py (`harness`,
`local_ray`, `own_ray`), shared by the session."""

from __future__ import annotations

from flows import reaper

# What these tests start in-process (Ray's cluster, Prefect's test server) is reaped when
# pytest ends, also when it is killed: the same watchdog as the `crucible` command's.
reaper.guard(scratch=False)
