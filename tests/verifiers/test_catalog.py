"""The catalog loader refuses malformed tasks with the file, the field and the expectation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from verifiers.catalog import TaskSpecError, load_catalog, load_task

GOOD_TOML = """
name = "and2"
family = "combinational"
level = 1
requirement = "y is a AND b."

[interface]
top = "and2"
kind = "combinational"

[[interface.ports]]
name = "a"
direction = "input"
width = 1

[[interface.ports]]
name = "b"
direction = "input"
width = 1

[[interface.ports]]
name = "y"
direction = "output"
width = 1

[harness]
reference = "ref.sv"
testbench = "tb.sv"
equivalence = "comb"
"""
REF = "module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n"


def make_task(root: Path, toml: str = GOOD_TOML, ref: str = REF, name: str = "and2") -> Path:
    d = root / "rtl" / name
    d.mkdir(parents=True)
    (d / "task.toml").write_text(toml)
    (d / "ref.sv").write_text(ref)
    (d / "tb.sv").write_text("module tb; endmodule\n")
    return d


def test_good_task_loads_with_texts_inlined(tmp_path):
    task = load_task(make_task(tmp_path))
    assert task.name == "and2" and task.domain == "rtl" and task.split == "train"
    assert task.reference == REF
    assert task.harness["testbench"].startswith("module tb")
    assert task.harness["ref_top"] == "and2"
    assert [p["name"] for p in task.interface["ports"]] == ["a", "b", "y"]
    assert len(task.task_id) == 64
    # the id is the hash of the spec: same spec, same id; another spec, another id
    assert load_task(tmp_path / "rtl" / "and2").task_id == task.task_id
    (tmp_path / "rtl" / "and2" / "ref.sv").write_text(REF.replace("a & b", "b & a"))
    assert load_task(tmp_path / "rtl" / "and2").task_id != task.task_id


@pytest.mark.parametrize(
    ("edit", "field", "expected"),
    [
        (lambda s: s.replace('family = "combinational"\n', ""), "family", "missing"),
        (lambda s: s.replace("level = 1", 'level = "one"'), "level", "integer level"),
        (lambda s: s.replace("level = 1", "level = 7"), "level", "1, 2 or 3"),
        (lambda s: s.replace('name = "and2"', 'name = "or2"'), "name", "directory name"),
        (
            lambda s: s.replace('kind = "combinational"', 'kind = "analog"'),
            "interface.kind",
            "combinational",
        ),
        (
            lambda s: s.replace(
                'width = 1\n\n[[interface.ports]]\nname = "b"',
                'width = 0\n\n[[interface.ports]]\nname = "b"',
            ),
            "interface.ports[0].width",
            "at least 1",
        ),
        (
            lambda s: s.replace('direction = "output"', 'direction = "out"'),
            "interface.ports[2].direction",
            "input, output, inout",
        ),
        (
            lambda s: s.replace('equivalence = "comb"', 'equivalence = "maybe"'),
            "harness.equivalence",
            "comb, seq, none",
        ),
        (
            lambda s: s.replace('testbench = "tb.sv"', 'testbench = "missing.sv"'),
            "harness.testbench",
            "existing file",
        ),
        (
            lambda s: s.replace('reference = "ref.sv"', 'reference = "../../x.sv"'),
            "harness.reference",
            "inside the task directory",
        ),
        (lambda s: s.replace("[interface]", "[interface\n"), "(file)", "valid TOML"),
        # the interface says y is 4 bits; the reference says 1
        (
            lambda s: s[: s.rindex("width = 1")] + "width = 4" + s[s.rindex("width = 1") + 9 :],
            "interface.ports",
            "y: declared output [4], reference has output [1]",
        ),
        # a port the reference does not have
        (
            lambda s: s.replace('name = "b"', 'name = "bb"'),
            "interface.ports",
            "bb declared but not a port",
        ),
        (
            lambda s: s.replace('top = "and2"', 'top = "and3"'),
            "harness.reference",
            "defining module 'and3'",
        ),
        (
            lambda s: s.replace('kind = "combinational"', 'kind = "sequential"'),
            "interface.clock",
            "clock input",
        ),
    ],
)
def test_malformed_task_is_refused_with_file_field_expectation(tmp_path, edit, field, expected):
    d = make_task(tmp_path, toml=edit(GOOD_TOML))
    with pytest.raises(TaskSpecError) as info:
        load_task(d)
    err = info.value
    assert err.field == field
    assert expected in str(err)
    assert str(d / "task.toml") in str(err)


def test_reference_that_does_not_elaborate_is_refused(tmp_path):
    d = make_task(
        tmp_path, ref="module and2(input a, input b, output y);\n assign y = a &;\nendmodule\n"
    )
    with pytest.raises(TaskSpecError, match=r"harness\.reference"):
        load_task(d)


def test_catalog_returns_good_tasks_and_errors_separately(tmp_path):
    make_task(tmp_path)
    make_task(
        tmp_path,
        toml=GOOD_TOML.replace("and2", "bad2").replace("level = 1", "level = 0"),
        ref=REF.replace("and2", "bad2"),
        name="bad2",
    )
    tasks, errors = load_catalog(tmp_path)
    assert [t.name for t in tasks] == ["and2"]
    assert len(errors) == 1 and errors[0].field == "level"


def test_builtin_catalog_is_valid_and_large_enough():
    root = Path(__file__).resolve().parents[2] / "tasks"
    tasks, errors = load_catalog(root, ["rtl"])
    assert not errors, [str(e) for e in errors]
    assert len(tasks) >= 40
    families = {t.family for t in tasks}
    for fam in (
        "arithmetic",
        "mux",
        "shift_register",
        "counter",
        "fsm_moore",
        "fsm_mealy",
        "fifo",
        "memory",
        "parameterized",
        "multi_module",
    ):
        assert fam in families, fam
    assert len({t.task_id for t in tasks}) == len(tasks)


def test_copy_of_catalog_task_loads(tmp_path):
    root = Path(__file__).resolve().parents[2] / "tasks" / "rtl"
    src = next(p for p in sorted(root.iterdir()) if (p / "task.toml").exists())
    shutil.copytree(src, tmp_path / "rtl" / src.name)
    assert load_task(tmp_path / "rtl" / src.name).name == src.name
