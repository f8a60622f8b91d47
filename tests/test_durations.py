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


def test_this_sessions_files_run_longest_first(request):
    """The conftest sorted this very session's items so (xdist hands them out file by
    file in this order): longest first by the table, each file's tests together."""
    seq = [i.nodeid.split("::", 1)[0] for i in request.session.items]
    runs = [f for k, f in enumerate(seq) if k == 0 or seq[k - 1] != f]
    assert len(runs) == len(set(runs))  # one run of items per file
    seconds = durations.load()
    weights = [seconds.get(f, 0.0) for f in runs]
    known = [w for w in weights if w > 0]
    assert known == sorted(known, reverse=True), runs


def test_the_table_names_test_files_that_exist():
    table = durations.load()
    assert table, "tests/durations.json is missing or empty"
    gone = [f for f in table if not (ROOT / f).is_file()]
    assert not gone, f"renamed or removed: {gone} (make test-durations)"
