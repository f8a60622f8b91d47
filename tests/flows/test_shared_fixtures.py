"""The shared Ray of tests/sessionfixtures.py is checked for isolation: what a module's
runs leave holding a slot is seen (and fails that module at its end), and a slot let go
is seen free again."""

from __future__ import annotations

import time

from tests.sessionfixtures import IDLE_WAIT_S, SHARED_CPUS, _held


def test_an_actor_left_holding_a_slot_is_seen_and_its_release_too(local_ray):
    import ray

    assert ray.cluster_resources()["CPU"] == SHARED_CPUS
    assert _held() == {}  # what the modules before this one ran let everything go

    @ray.remote(num_cpus=1, resources={"eda": 1} if ray.cluster_resources().get("eda") else {})
    class Holder:
        def ping(self) -> int:
            return 1

    holder = Holder.remote()
    assert ray.get(holder.ping.remote()) == 1
    # the available resources Ray reports lag the actor's start (seen: no CPU held yet
    # right after its first reply), so the held slot is awaited as its release is
    held = _held_once(lambda h: "CPU" in h)
    assert held.get("CPU") == 1.0 and held.get("eda", 1.0) == 1.0, held
    ray.kill(holder)
    assert _held_once(lambda h: not h) == {}


def _held_once(done) -> dict:
    """`_held()` once `done(held)` is true, or as it is after IDLE_WAIT_S."""
    deadline = time.monotonic() + IDLE_WAIT_S
    while not done(held := _held()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return held
