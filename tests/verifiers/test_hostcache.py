"""The host's sealed cache shared by processes: several verifiers (the test session's
workers, two runs on one host) making it at the same moment all read one whole key, and
each one's entries read back in the others."""

from __future__ import annotations

import multiprocessing as mp

from verifiers.hostcache import SealedCache


def _first_use(root: str, n: int, start, out) -> None:
    start.wait()
    try:
        cache = SealedCache(root)
        cache.write(f"k{n}", {"n": n})
        out.put((n, cache._secret().hex()))
    except Exception as e:  # the test reads what went wrong
        out.put((n, f"error: {type(e).__name__}: {e}"))


def test_processes_making_the_cache_at_once_share_one_whole_key(tmp_path):
    ctx = mp.get_context("fork")
    rounds, procs = 20, 6
    for r in range(rounds):  # the race is narrow: many fresh caches, all started together
        root = str(tmp_path / f"cache{r}")
        start, out = ctx.Barrier(procs), ctx.Queue()
        ps = [ctx.Process(target=_first_use, args=(root, n, start, out)) for n in range(procs)]
        for p in ps:
            p.start()
        got = dict(out.get(timeout=60) for _ in ps)
        for p in ps:
            p.join(timeout=60)
        assert len(set(got.values())) == 1, got  # one key, no "damaged cache key"
        cache = SealedCache(root)
        assert all(cache.read(f"k{n}") == {"n": n, "key": f"k{n}"} for n in range(procs))


def test_a_tampered_entry_is_dropped(tmp_path):
    cache = SealedCache(tmp_path / "c")
    cache.write("k", {"v": 1})
    path = cache.path("k")
    path.write_text(path.read_text().replace('"v": 1', '"v": 2'))
    assert cache.read("k") is None
