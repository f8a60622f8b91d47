"""A lake on object storage: `--lake s3://bucket/prefix`.

AWS S3 cannot exist here: moto's S3 server (`python -m moto.server`, a real HTTP server
speaking the S3 REST API on loopback) is its stand-in, started by the fixture below in a
process of its own (delta-rs holds the GIL during some calls, so an in-process threaded
server would deadlock against it). moto >= 5.2 honours conditional writes (If-None-Match,
If-Match), which the concurrency tests below rely on, as delta-rs's commits do.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import boto3
import pytest
import typer
from botocore.exceptions import ClientError
from typer.testing import CliRunner

from flows.cli import app
from flows.options import RunOptions
from lake import db
from lake.maintenance import compact, vacuum
from lake.store import Lake, LakeError
from lake.writer import BatchWriter
from tests.lake import workers
from tests.lake.conftest import make_candidate, make_task, make_verdict

KEY, SECRET, REGION = "crucible-test", "crucible-test-secret", "us-east-1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def moto_server(*command: str) -> Iterator[str]:
    """moto's S3 server (or `command`, given its port last) on a free loopback port."""
    port = _free_port()
    argv = (
        [*command, str(port)]
        if command
        else ["-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    )
    proc = subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"moto's server exited with {proc.returncode}")
                time.sleep(0.1)
        else:
            pytest.fail("moto's server did not answer within 30 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server: the stand-in for AWS S3."""
    with moto_server() as url:
        yield url


@pytest.fixture
def s3_env(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The AWS environment a user sets for an S3-compatible store (children inherit it)."""
    for name in ("AWS_SESSION_TOKEN", "AWS_S3_ALLOW_UNSAFE_RENAME", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    return s3_endpoint


def client(endpoint: str):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        region_name=REGION,
    )


_buckets = iter(range(10_000))


@pytest.fixture
def bucket(s3_env: str) -> str:
    name = f"lake-{os.getpid()}-{next(_buckets)}"
    client(s3_env).create_bucket(Bucket=name)
    return name


def keys(endpoint: str, bucket: str, prefix: str = "") -> list[str]:
    pages = client(endpoint).get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def ids(lake: Lake, table: str, column: str) -> list[str]:
    return lake.table(table).to_pyarrow_table(columns=[column]).column(0).to_pylist()


# --- the stand-in itself ----------------------------------------------------------------


def test_the_stand_in_refuses_an_overwrite_under_if_none_match(s3_env: str, bucket: str):
    """What safe commits need of the store: a second put of a key with If-None-Match: *
    fails (412). A store that ignored it would let two writers both 'win' one version."""
    s3 = client(s3_env)
    s3.put_object(Bucket=bucket, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError, match="PreconditionFailed"):
        s3.put_object(Bucket=bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"first"


# --- tables ------------------------------------------------------------------------------


def test_a_new_lake_on_s3_is_laid_out_like_a_local_one(s3_env: str, bucket: str):
    lake = Lake(f"s3://{bucket}/runs/a")
    assert lake.is_remote and lake.root == f"s3://{bucket}/runs/a"
    assert lake.table_uri("verdicts") == f"s3://{bucket}/runs/a/tables/verdicts"
    assert lake.storage_options is not None
    assert lake.storage_options["conditional_put"] == "etag"
    found = keys(s3_env, bucket)
    assert f"runs/a/tables/verdicts/_delta_log/{0:020d}.json" in found
    assert [k for k in found if not k.startswith("runs/a/tables/")] == [
        "runs/a/.write-probe",  # one hidden key, overwritten by each writable open
        "runs/a/_crucible_lake.json",
    ]
    # pathlib's mangling of the URL (what typer's Path option passes) is the same lake
    again = Lake(Path(f"s3://{bucket}/runs/a"), readonly=True)
    assert again.root == lake.root and again.versions() == lake.versions()


def test_the_writer_appends_and_reappending_adds_nothing(s3_env: str, bucket: str):
    lake = Lake(f"s3://{bucket}/lake")
    task = make_task()
    cands = [make_candidate(task, f"module m{i}; endmodule") for i in range(12)]
    written = []
    for _ in range(2):
        with BatchWriter(lake, batch_size=5) as w:
            w.add_task(task)
            for c in cands:
                w.add_candidate(c, task.domain)
                w.add_verdict(make_verdict(c, task, "pass"))
        written.append(w.stats["candidates"].written)
    assert written == [12, 0]
    assert sorted(ids(lake, "candidates", "candidate_id")) == sorted(c.candidate_id for c in cands)
    assert len(ids(lake, "verdicts", "candidate_id")) == 12


def test_duckdb_reads_the_tables_on_s3(s3_env: str, bucket: str):
    lake = Lake(f"s3://{bucket}/lake")
    task = make_task()
    good, bad = make_candidate(task, "module a; endmodule"), make_candidate(task, "module b;")
    with BatchWriter(lake) as w:
        w.add_task(task)
        for c in (good, bad):
            w.add_candidate(c, task.domain)
        w.add_verdict(make_verdict(good, task, "pass"))
        w.add_verdict(make_verdict(bad, task, "compile_error", code="syntax"))
    con = db.connect(Lake(f"s3://{bucket}/lake", readonly=True))
    got = con.execute("SELECT status, count(*) FROM verdicts GROUP BY 1 ORDER BY 1").fetchall()
    assert got == [("compile_error", 1), ("pass", 1)]
    # the shipped queries (over the shipped views) work on it too
    rates = db.rows(con, "pass_rates")
    assert sum(r["passed"] for r in rates) == 1 and sum(r["candidates"] for r in rates) == 2


def test_crucible_sql_on_an_s3_lake(s3_env: str, bucket: str):
    lake = Lake(f"s3://{bucket}/lake")
    task = make_task("mux", "rtl")
    with BatchWriter(lake) as w:
        w.add_task(task)
    res = CliRunner().invoke(
        app,
        ["sql", "SELECT name FROM tasks", "--lake", f"s3://{bucket}/lake", "--json"],
    )
    assert res.exit_code == 0, res.output
    assert [json.loads(line) for line in res.output.splitlines()] == [{"name": "mux"}]
    # a prefix that holds no lake is refused in one line, not made
    res = CliRunner().invoke(app, ["sql", "SELECT 1", "--lake", f"s3://{bucket}/typo"])
    assert res.exit_code != 0
    assert "no lake at s3://" in res.output and "Traceback" not in res.output
    assert keys(s3_env, bucket, "typo") == []
    # a task named wrong on an S3 lake is told with the lake as written
    res = CliRunner().invoke(
        app,
        ["pending", "--lake", f"s3://{bucket}/lake", "--domain", "rtl", "--task", "nope"],
        env={"COLUMNS": "300"},
    )
    assert res.exit_code == 2, res.output
    assert f"in lake s3://{bucket}/lake " in " ".join(res.output.split()), res.output


def test_compaction_and_vacuum_on_s3(s3_env: str, bucket: str):
    lake = Lake(f"s3://{bucket}/lake")
    for i in range(3):
        with BatchWriter(lake) as w:
            w.add("candidates", [workers.candidate_row(f"c{i}", "-")])
    metrics = compact(lake, "candidates")
    assert metrics["candidates"]["numFilesRemoved"] == 3
    removed = vacuum(lake, retention_hours=0, force=True)
    assert len(removed["candidates"]) == 3  # the compacted-away files
    assert removed["artifact_blob_temps"] == []  # S3 puts leave no temp files
    assert sorted(ids(Lake(lake.root), "candidates", "candidate_id")) == ["c0", "c1", "c2"]


# --- safe concurrent commits -------------------------------------------------------------

# moto's server with one barrier in front: the first PUT of the key ending in argv[1] is
# held until a second PUT of it arrives, and the second goes on only once the first was
# answered. Two writers that read the same version thus both try to commit the next one,
# every time. argv[2] gets one line per held PUT: its HTTP status. argv[3] ("ignore")
# drops If-None-Match first: a store without conditional writes, to show the test fails.
COLLIDING_SERVER = """
import sys, threading
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from moto.server import main
suffix, log, mode, port = sys.argv[1:5]
lock, first_in, first_done, seen = threading.Lock(), threading.Event(), threading.Event(), []
app = DomainDispatcherApplication.__call__

def call(self, environ, start_response):
    if environ["REQUEST_METHOD"] != "PUT" or not environ["PATH_INFO"].endswith(suffix):
        return app(self, environ, start_response)
    if mode == "ignore":
        environ.pop("HTTP_IF_NONE_MATCH", None)
    with lock:
        seen.append(1)
        first = len(seen) == 1
    if first:
        first_in.wait(60)
    else:
        first_in.set()
        first_done.wait(60)

    def answer(status, headers, *rest):
        with open(log, "a") as f:
            f.write(status.split()[0] + "\\n")
        return start_response(status, headers, *rest)

    try:
        return app(self, environ, answer)
    finally:
        if first:
            first_done.set()

DomainDispatcherApplication.__call__ = call
main(["-H", "127.0.0.1", "-p", port])
"""


def test_two_writers_committing_one_version_both_land(
    s3_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Both writers read version 0 and PUT version 1 at once (the server makes them
    collide). The store answers the second with 412 (If-None-Match: *), and its writer
    commits at version 2: no commit is lost. A store that ignored the header would answer
    200 twice and the second commit would replace the first (checked by hand: with the
    server's "ignore" mode this test fails on the rows)."""
    log = tmp_path / "held.log"
    suffix = f"tables/candidates/_delta_log/{1:020d}.json"
    with moto_server("-c", COLLIDING_SERVER, suffix, str(log), "honour") as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        client(url).create_bucket(Bucket="collide")
        root = "s3://collide/lake"
        Lake(root)
        with mp.get_context("spawn").Pool(2) as pool:
            results = pool.starmap(workers.write_range, [(root, 0, 1, 1), (root, 1, 2, 1)])
        assert log.read_text().split() == ["200", "412"]  # they did collide, once
        lake = Lake(root)
        assert sorted(ids(lake, "candidates", "candidate_id")) == ["c0000000", "c0000001"]
        assert [r["written"] for r in results] == [1, 1]
        writes = [h for h in lake.table("candidates").history() if h["operation"] == "WRITE"]
        assert len(writes) == 2 and lake.version("candidates") == 2


def test_concurrent_writers_lose_no_commit(s3_env: str, bucket: str):
    root = f"s3://{bucket}/lake"
    Lake(root)
    ranges = [(0, 300), (200, 500)]  # overlapping ids, many small commits each
    with mp.get_context("spawn").Pool(2) as pool:
        results = pool.starmap(workers.write_range, [(root, a, b, 25) for a, b in ranges])
    lake = Lake(root)
    got = ids(lake, "candidates", "candidate_id")
    assert set(got) == {f"c{i:07d}" for a, b in ranges for i in range(a, b)}
    assert max(Counter(got).values()) <= 2  # a racing new id may land twice; never more
    assert sum(r["written"] for r in results) == len(got)
    # every commit either writer made is in the log: none overwrote another
    writes = [h for h in lake.table("candidates").history() if h["operation"] == "WRITE"]
    assert len(writes) == sum(r["commits"] for r in results)


# --- blobs -------------------------------------------------------------------------------


def test_artifacts_round_trip_on_s3(s3_env: str, bucket: str):
    lake = Lake(f"s3://{bucket}/lake")
    data = b"\x89PNG fake picture bytes" * 100
    sha = lake.put_artifact(data)
    assert lake.has_artifact(sha)
    assert lake.put_artifact(data) == sha  # stored once
    assert Lake(lake.root, readonly=True).read_artifact(sha) == data
    assert keys(s3_env, bucket, "lake/artifacts/") == [f"lake/artifacts/{sha[:2]}/{sha}"]
    other = "0" * 64
    assert not lake.has_artifact(other)
    with pytest.raises(LakeError, match=f"artifact {other} is not in lake s3://"):
        lake.read_artifact(other)
    with pytest.raises(LakeError, match="has no local file"):
        lake.artifact_file(sha)


def test_a_damaged_blob_on_s3_is_refused(s3_env: str, bucket: str):
    lake = Lake(f"s3://{bucket}/lake")
    sha = lake.put_artifact(b"original")
    client(s3_env).put_object(Bucket=bucket, Key=f"lake/artifacts/{sha[:2]}/{sha}", Body=b"x")
    with pytest.raises(LakeError, match="damaged"):
        lake.read_artifact(sha)


# --- what a wrong root or setting says --------------------------------------------------


@pytest.mark.parametrize(
    "root, shown",
    [
        ("s3:/b-1/lake/x", "s3://b-1/lake/x"),
        ("s3://b-1/lake/", "s3://b-1/lake"),
        ("/data/lake", "/data/lake"),
        ("s3:/X/lake", "s3://X/lake"),  # not a bucket name: still shown as a URL
    ],
)
def test_a_lake_root_is_shown_as_written(root: str, shown: str):
    from lake.objectstore import display

    assert display(Path(root) if root.startswith("/") else root) == shown


@pytest.mark.parametrize(
    ("root", "says"),
    [
        ("gs://bucket/lake", r"scheme 'gs' is not supported; use a local directory or s3://"),
        ("s3://Bad_Bucket/lake", r"'Bad_Bucket' is not a valid S3 bucket name"),
        ("s3://ok-bucket/a//b", r"has an empty, '\.' or '\.\.' part"),
    ],
)
def test_a_bad_url_says_what_to_pass(s3_env: str, root: str, says: str):
    with pytest.raises(LakeError, match=says):
        Lake(root)


def test_a_missing_bucket_says_to_create_it(s3_env: str):
    with pytest.raises(LakeError, match=r"bucket 'no-such-bucket' does not exist .*aws s3 mb"):
        Lake("s3://no-such-bucket/lake")


def test_missing_credentials_are_named(s3_env: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(LakeError, match=r"needs credentials: set AWS_SECRET_ACCESS_KEY"):
        Lake("s3://any-bucket/lake")


def test_plain_http_needs_allow_http(s3_env: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("AWS_ALLOW_HTTP")
    with pytest.raises(LakeError, match=r"plain http: set AWS_ALLOW_HTTP=true"):
        Lake("s3://any-bucket/lake")


def test_an_unreachable_endpoint_says_what_to_check(s3_env: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_free_port()}")
    with pytest.raises(LakeError, match=r"object store at http://127\.0\.0\.1:\d+ failed"):
        Lake("s3://any-bucket/lake")


def test_unsafe_rename_is_refused_unless_asked(
    s3_env: str, bucket: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("AWS_S3_ALLOW_UNSAFE_RENAME", "true")
    with pytest.raises(LakeError, match=r"AWS_S3_ALLOW_UNSAFE_RENAME is set: .*unset it"):
        Lake(f"s3://{bucket}/lake")
    monkeypatch.setenv("CRUCIBLE_LAKE_UNSAFE_COMMITS", "1")
    lake = Lake(f"s3://{bucket}/lake")
    assert lake.storage_options is not None
    assert lake.storage_options["AWS_S3_ALLOW_UNSAFE_RENAME"] == "true"


def test_a_prefix_holding_other_things_is_not_made_a_lake(s3_env: str, bucket: str):
    client(s3_env).put_object(Bucket=bucket, Key="data/report.csv", Body=b"a,b\n")
    with pytest.raises(LakeError, match=r"not empty and not a Crucible lake .*report\.csv"):
        Lake(f"s3://{bucket}/data")
    assert keys(s3_env, bucket, "data/") == ["data/report.csv"]


def test_a_read_only_open_of_no_lake_makes_nothing(s3_env: str, bucket: str):
    with pytest.raises(LakeError, match=r"no lake at s3://.*crucible run --lake"):
        Lake(f"s3://{bucket}/none", readonly=True)
    assert keys(s3_env, bucket) == []


def test_exports_of_an_s3_lake_need_a_local_directory(s3_env: str, bucket: str):
    lake = Lake(f"s3://{bucket}/lake")
    with pytest.raises(LakeError, match=r"no local directory for exports: pass a local"):
        lake.root / "exports"


def test_a_run_on_an_s3_lake_needs_an_export_dir(s3_env: str, bucket: str, tmp_path: Path):
    opts = RunOptions(lake=Path(f"s3://{bucket}/lake"))  # what typer's Path makes of it
    with pytest.raises(typer.BadParameter, match=rf"^s3://{bucket}/lake is on an object store"):
        opts.pipeline_settings()
    settings = RunOptions(lake=opts.lake, export_dir=tmp_path).pipeline_settings()
    assert Lake(settings.lake).root == f"s3://{bucket}/lake"  # not made relative to the cwd
    # the run records the root as the user wrote it, not pathlib's `s3:/`
    assert str(opts.lake) == f"s3:/{bucket}/lake"
    assert settings.to_params()["lake"] == f"s3://{bucket}/lake"
    no_export = RunOptions(lake=opts.lake, stages="generate,verify").pipeline_settings()
    assert no_export.export_dir is None


def test_an_export_named_under_an_s3_lake_is_refused_before_the_flow(s3_env: str, bucket: str):
    Lake(f"s3://{bucket}/lake")
    res = CliRunner().invoke(
        app, ["export", "--lake", f"s3://{bucket}/lake", "--name", "ds"], env={"COLUMNS": "200"}
    )
    assert res.exit_code == 2, res.output
    assert "is on an object store: exports are written to a local directory" in res.output
    assert "--out" in res.output and "Traceback" not in res.output
