"""tests/durations.py: the per-file seconds that order `make test`'s files, read from a
junit report, and the checked-in table names files that exist."""

from __future__ import annotations

from pathlib import Path

from tests import durations

ROOT = Path(__file__).resolve().parents[1]

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.flows.test_pipeline" name="test_a" time="10.5" />
<testcase classname="tests.flows.test_pipeline" name="test_b[x]" time="2.0" />
<testcase classname="tests.verifiers.test_conformance.TestConformance" name="test_c" time="3" />
<testcase classname="tests.test_packaging" name="test_d" time="0.25" />
</testsuite></testsuites>
"""


def test_a_junit_report_sums_each_files_tests(tmp_path):
    report = tmp_path / "r.xml"
    report.write_text(REPORT)
    assert durations.from_junit(report) == {
        "tests/flows/test_pipeline.py": 12.5,
        "tests/verifiers/test_conformance.py": 3.0,  # a class's tests count for its file
        "tests/test_packaging.py": 0.25,
    }
    out = tmp_path / "d.json"
    assert durations.main([str(report), "--out", str(out), "--min-s", "1"]) == 0
    assert durations.load(out) == {
        "tests/flows/test_pipeline.py": 12.5,
        "tests/verifiers/test_conformance.py": 3.0,
    }
    assert durations.main([str(tmp_path / "absent.xml"), "--out", str(out)]) == 2
    assert durations.load(tmp_path / "absent.json") == {}


def test_the_shared_rays_files_come_first_each_group_longest_first():
    seconds = {"a.py": 5.0, "b.py": 50.0, "r1.py": 1.0, "r2.py": 9.0}
    files = ["a.py", "r1.py", "new.py", "b.py", "r2.py", "new_r.py"]
    first = {"r1.py", "r2.py", "new_r.py"}
    got = sorted(files, key=lambda f: durations.order_key(f, seconds, first))
    # unknown files weigh nothing: last of their group, in their place
    assert got == ["r2.py", "r1.py", "new_r.py", "b.py", "a.py", "new.py"]


def test_this_sessions_files_run_in_that_order(request):
    """The conftest sorted this very session's items so (xdist hands them out file by
    file in this order): the shared Ray's files first, each group longest first."""
    from tests.sessionfixtures import RAY_FIXTURES

    items = request.session.items
    files = list(dict.fromkeys(i.nodeid.split("::", 1)[0] for i in items))
    first = {i.nodeid.split("::", 1)[0] for i in items if RAY_FIXTURES & set(i.fixturenames)}
    seconds = durations.load()
    assert files == sorted(files, key=lambda f: durations.order_key(f, seconds, first))
    # each file's tests are together: one run of items per file
    seq = [i.nodeid.split("::", 1)[0] for i in items]
    runs = [f for k, f in enumerate(seq) if k == 0 or seq[k - 1] != f]
    assert len(runs) == len(files)


def test_the_table_names_test_files_that_exist():
    table = durations.load()
    assert table, "tests/durations.json is missing or empty"
    gone = [f for f in table if not (ROOT / f).is_file()]
    assert not gone, f"renamed or removed: {gone} (make test-durations)"
