"""The no-writes seccomp filter (verifiers/seccomp.py) as bwrap loads it for a sandboxed
run: reading and writing to inherited pipes work; creating, opening for writing, removing
and renaming files fail, whatever the path; a run that needs it is refused unconfined."""

from __future__ import annotations

import platform
import shutil

import pytest

from verifiers import seccomp
from verifiers.contract import Limits
from verifiers.sandbox import Sandbox, SandboxUnavailable

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


def _run(tmp_path, script: str, filt: bytes | None):
    sb = Sandbox(Limits(timeout_s=10))
    work = sb.prepare_workdir(tmp_path / "w")
    (work / "old.txt").write_text("kept\n")
    (work / "old.txt").chmod(0o666)
    return sb.run(["/bin/sh", "-c", script], work, seccomp=filt), work


def test_without_the_filter_the_sandbox_writes_its_work_dir(tmp_path):
    res, work = _run(tmp_path, "echo new > new.txt && rm old.txt", None)
    assert res.returncode == 0, res.stderr
    assert (work / "new.txt").exists() and not (work / "old.txt").exists()


@pytest.mark.parametrize(
    "script",
    [
        "echo new > new.txt",  # create
        "echo more >> old.txt",  # append
        "echo over > old.txt",  # truncate
        "echo x > /proc/self/fd/2",  # reopen its own stderr for writing
        "rm old.txt",
        "mv old.txt moved.txt",
        "mkdir d",
        "ln -s old.txt link",
        "cp old.txt copy.txt",
        "echo x > /dev/null",  # even the null device: no open for writing at all
    ],
)
def test_the_filter_refuses_every_file_write(tmp_path, script):
    res, work = _run(tmp_path, script, seccomp.no_writes())
    assert res.returncode != 0, (script, res.stdout, res.stderr)
    assert sorted(p.name for p in work.iterdir()) == ["old.txt"]
    assert (work / "old.txt").read_text() == "kept\n"


def test_the_filter_lets_reads_and_inherited_pipes_through(tmp_path):
    res, _ = _run(
        tmp_path,
        "cat old.txt; wc -c < /etc/ld.so.cache | tr -d 0-9; echo err >&2",
        seccomp.no_writes(),
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["kept"] and res.stderr.strip() == "err"


def test_a_run_that_needs_the_filter_is_refused_unconfined(tmp_path):
    sb = Sandbox(Limits(unconfined=True))
    with pytest.raises(SandboxUnavailable, match="seccomp"):
        sb.run(["/bin/true"], tmp_path, seccomp=seccomp.no_writes())


def test_an_architecture_without_a_filter_says_so():
    assert seccomp.no_writes(platform.machine())  # this machine has one
    with pytest.raises(seccomp.SeccompUnsupported, match="riscv64"):
        seccomp.no_writes("riscv64")
