"""The sandbox, tested by running real commands in it: what a candidate can and cannot do."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest

from verifiers import sandbox as sandbox_mod
from verifiers.contract import Limits
from verifiers.sandbox import INSTALL_HINT, Sandbox, SandboxUnavailable, sandbox_uid

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason=f"needs bubblewrap: {INSTALL_HINT}",
)


@pytest.fixture
def box():
    # a fresh dir straight under the temp root, like the verifier's: pytest's tmp_path sits
    # below 0700 dirs that the sandbox uid cannot cross
    with tempfile.TemporaryDirectory(prefix="crucible-sandbox-test-") as tmp:

        def run(script: str, **limits):
            sb = Sandbox(Limits(**limits))
            work = sb.prepare_workdir(Path(tmp))
            return sb.run(["/bin/sh", "-c", script], work), work

        yield run


def test_runs_as_an_unprivileged_uid(box):
    res, _ = box("id -u")
    assert res.returncode == 0
    expected = sandbox_uid() if os.geteuid() == 0 else os.geteuid()
    assert expected != 0
    assert res.stdout.strip() == str(expected)


def test_no_network_even_to_the_hosts_loopback(box):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        probe = (
            "import socket; print(sorted(n for _, n in socket.if_nameindex())); "
            f"socket.create_connection(('127.0.0.1', {port}), timeout=2)"
        )
        res, _ = box(f'python3 -c "{probe}"')
    finally:
        server.close()
    assert res.returncode != 0
    assert res.stdout.strip() == "['lo']"  # a private network namespace: loopback only
    assert "Connection refused" in res.stderr or "unreachable" in res.stderr


def test_system_is_read_only_and_only_work_persists(box, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    res, work = box(
        "touch /usr/evil; echo usr=$?; "
        f"touch {outside}/evil; echo outside=$?; "
        "echo x > /tmp/scratch; echo x > /evil; "
        "echo kept > /work/result; ls /etc"
    )
    assert "usr=1" in res.stdout
    assert "outside=1" in res.stdout  # host paths outside the work dir are not there at all
    assert not (outside / "evil").exists()
    assert not Path("/evil").exists()
    assert (work / "result").read_text() == "kept\n"
    assert "passwd" not in res.stdout and "shadow" not in res.stdout  # /etc is not bound


def test_timeout_kills_the_whole_process_group(box):
    start = time.perf_counter()
    res, work = box("(sleep 1.5; echo late > /work/marker) & sleep 30", timeout_s=0.5)
    assert res.timed_out and res.limit_hit == "timeout"
    assert time.perf_counter() - start < 5
    time.sleep(2.0)  # the grandchild would have written its marker by now
    assert not (work / "marker").exists()


def test_output_is_capped_while_running(box):
    res, _ = box("yes spam", output_bytes=4096, timeout_s=10)
    assert res.output_capped and res.limit_hit == "output_limit"
    assert len(res.stdout) <= 4096
    assert res.seconds < 5


def test_file_size_limit(box):
    res, work = box("head -c 3000000 /dev/zero > /work/big", fsize_mb=1)
    assert res.limit_hit == "file_size_limit"
    assert (work / "big").stat().st_size <= 1024 * 1024


def test_cpu_limit(box):
    res, _ = box("while :; do :; done", cpu_s=1, timeout_s=20)
    assert res.limit_hit == "cpu_limit"


def test_sandbox_unavailable_without_bwrap(monkeypatch, tmp_path):
    bin_dir = tmp_path / "bin"  # a PATH without bwrap
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(sandbox_mod, "_probed", {})
    with pytest.raises(SandboxUnavailable) as err:
        Sandbox(Limits())
    assert INSTALL_HINT in str(err.value) and "bwrap" in str(err.value)
    Sandbox(Limits(unconfined=True))  # the explicit opt-out does not need it


def test_runs_leave_no_processes_behind(box):
    # each run used to leave a zombie bwrap that counted against the uid's process limit
    for _ in range(24):
        res, _ = box("(sleep 5 &); true", nproc=16)
        assert res.returncode == 0, res.stderr


def _unique(seconds: str) -> str:
    import secrets

    return f"{seconds}.{secrets.randbelow(10**6):06d}"


def _running(*argv: str) -> list[str]:
    """The pids whose argv is exactly `argv`: the command itself, not a shell or a bwrap
    that names it among its arguments."""
    want = "".join(a + "\0" for a in argv).encode()
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if Path(f"/proc/{name}/cmdline").read_bytes() == want:
                    out.append(name)
            except OSError:
                continue
    return out


def _alive(marker: str) -> list[str]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmd = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd:
                out.append(name)
    return out


def test_setsid_double_fork_survivors_die_with_the_run(box):
    # the run's pid namespace ends with its pid 1: a daemonized process goes with it
    a, b = _unique("71"), _unique("72")  # other runs of this test may be on the machine
    res, _ = box(f"setsid sh -c '(sleep {a} &) ; sleep {b}' & sleep 0.2; echo done")
    assert res.returncode == 0 and res.stdout.strip() == "done"
    deadline = time.monotonic() + 5
    while (_alive(f"sleep {a}") or _alive(f"sleep {b}")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(f"sleep {a}") and not _alive(f"sleep {b}")


def test_a_killed_bwrap_takes_the_whole_sandbox(tmp_path):
    # what a host that dies (SIGKILL) or a time-out does: bwrap goes, so must the candidate
    import subprocess

    from verifiers.sandbox import Confinement, confined_argv, host_env, limits_shell

    with tempfile.TemporaryDirectory(prefix="crucible-sandbox-test-") as tmp:
        lim = Limits()
        sb = Sandbox(lim)
        work = sb.prepare_workdir(Path(tmp))
        c = Confinement(work)
        shell = limits_shell(lim, 30, sb.drop_uid, status=False)
        cmd = [*confined_argv(c, lim, sb.drop_uid is not None), *shell]
        a, b = _unique("73"), _unique("74")
        cmd += ["/bin/sh", "-c", f"setsid sleep {a} & sleep {b}"]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, env=host_env(c, lim))
        deadline = time.monotonic() + 5
        # both sleeps themselves, not bwrap's argv that names them: a bwrap killed while
        # it sets up (before its child's parent-death signal is armed, just before exec)
        # leaves that child running; this test is about a sandbox that has started
        while not (_running("sleep", a) and _running("sleep", b)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _running("sleep", a) and _running("sleep", b), "the sandbox did not start"
        os.kill(proc.pid, 9)  # bwrap itself, not its process group
        proc.wait()
        deadline = time.monotonic() + 5
        while (_alive(f"sleep {a}") or _alive(f"sleep {b}")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(f"sleep {a}") and not _alive(f"sleep {b}")


def test_a_sandbox_fault_is_read_from_the_sandbox_not_from_the_candidate(box, monkeypatch):
    # a candidate printing bwrap's own error words is still the candidate's run
    res, _ = box("echo 'bwrap: Can't fork: Resource temporarily unavailable' >&2; exit 1")
    assert res.started and res.sandbox_fault is None
    # a sandbox that cannot start the command is the sandbox's fault
    from verifiers import sandbox as sb_mod

    real = sb_mod.confined_argv
    monkeypatch.setattr(
        sb_mod, "confined_argv", lambda *a, **k: [*real(*a, **k), "--no-such-bwrap-option"]
    )
    res, _ = box("true")
    assert not res.started and res.sandbox_fault


def test_tmp_is_capped_in_size(box):
    # tmpfs pages are outside the address-space limit: an uncapped /tmp was a way round it
    res, _ = box("head -c 100000000 /dev/zero > /tmp/fill; echo rc=$?", fsize_mb=256, memory_mb=256)
    assert "rc=0" not in res.stdout
    assert "No space left" in res.stderr


def test_another_sandboxs_processes_do_not_count_against_this_one():
    # each worker has a uid of its own: RLIMIT_NPROC held by one cannot starve another
    import threading

    with (
        tempfile.TemporaryDirectory(prefix="crucible-sandbox-test-") as a,
        tempfile.TemporaryDirectory(prefix="crucible-sandbox-test-") as b,
    ):
        hog, other = Sandbox(Limits(nproc=6), slot=1), Sandbox(Limits(nproc=6), slot=2)
        if os.geteuid() == 0:
            assert hog.uid != other.uid
        wa, wb = hog.prepare_workdir(Path(a)), other.prepare_workdir(Path(b))
        t = threading.Thread(
            target=hog.run,
            args=(["/bin/sh", "-c", "while :; do sleep 2 & done"], wa),
            kwargs={"timeout_s": 3},
        )
        t.start()
        time.sleep(0.5)
        res = other.run(["/bin/sh", "-c", "sleep 0.1 & sleep 0.1 & wait; echo ok"], wb)
        t.join()
        assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


def test_emptying_a_dir_removes_what_a_candidate_left_and_never_enters_a_mount(tmp_path):
    """The sandbox's /tmp is emptied after each job, and the host's code is bound in below
    it when the checkout lies in /tmp: that mount stays whole (removing into it failed and
    replaced the CAD worker after every job), the candidate's files around it go."""
    import subprocess
    import sys

    code = tmp_path / "code"
    (code / "pkg").mkdir(parents=True)
    (code / "pkg" / "mod.py").write_text("x = 1\n")
    scratch = tmp_path / "scratch"  # the tmpfs, as the sandbox's /tmp
    scratch.mkdir()
    guest = scratch / "checkout" / "code"
    script = f"""
import json, os, sys
sys.path.insert(0, {str(Path.cwd())!r})
from verifiers.sandbox import empty_dir
root = {str(scratch)!r}
open(os.path.join(root, "junk"), "w").write("j")
open(os.path.join(root, "checkout", "planted"), "w").write("p")  # beside the mount
os.makedirs(os.path.join(root, "locked", "in"))
open(os.path.join(root, "locked", "in", "f"), "w").write("f")
os.chmod(os.path.join(root, "locked", "in"), 0)
os.chmod(os.path.join(root, "locked"), 0)
os.symlink({str(code)!r}, os.path.join(root, "link"))  # unlinked, never followed
os.makedirs(os.path.join(root, "kept"))
print(empty_dir(root, ["kept"]))
print(json.dumps(sorted(os.path.relpath(os.path.join(d, n), root)
                        for d, ds, fs in os.walk(root) for n in ds + fs)))
"""
    res = subprocess.run(
        ["bwrap", "--dev-bind", "/", "/", "--tmpfs", str(scratch),
         "--ro-bind", str(code), str(guest), sys.executable, "-c", script],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    ok, left = res.stdout.splitlines()
    assert ok == "True"
    assert json.loads(left) == ["checkout", "checkout/code", "checkout/code/pkg",
                          "checkout/code/pkg/mod.py", "kept"]  # fmt: skip
    assert (code / "pkg" / "mod.py").read_text() == "x = 1\n"


def test_emptying_a_dir_removes_files_and_trees_and_is_false_for_no_dir(tmp_path):
    from verifiers.sandbox import empty_dir

    (tmp_path / "a").write_text("a")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("f")
    assert empty_dir(tmp_path) and os.listdir(tmp_path) == []
    assert empty_dir(tmp_path / "missing") is False  # nothing to say it is empty
    # a link in the root's place is never followed: what it leads to stays
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "kept").write_text("k")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    assert empty_dir(tmp_path / "link") is False
    assert (tmp_path / "target" / "kept").read_text() == "k"
