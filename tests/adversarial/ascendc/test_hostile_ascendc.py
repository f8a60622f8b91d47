"""Hostile ascendc candidates fail for their real reason: never a pass, never infra, no
canary read, nothing left; and the next innocent candidate on the same verifier passes.

C++ cases run on tests/fixtures/ascendc/add_custom (Host+Device: tiling header, host
tiling function, kernel with its own tiling struct); their codes come from the static
checks (verifiers/ascendc/static.py), being written alongside: until they land, (a), (b)
C++ and (c) fail here, by design. pyasc cases run on tasks/ascendc/add, through the front
door and, for those that attack the lowering itself (f), with the DSL check switched off
(`DslCheckOffForTests`), so the sandbox and the host's reading of the lowering's files are
what stop them. Every verdict is asked of the gates that run here (extract, lower, static)
and again of every gate, where nothing may pass: compile, precision and speedup need CANN.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.ascendc.cases import reference as dsl_reference
from tests.adversarial.ascendc.cases import replace, with_helper
from tests.adversarial.ascendc.verifiers import DslCheckOffForTests, needs_pyasc
from tests.adversarial.harness import CANDIDATE_FAULT, assert_innocent_passes
from verifiers.ascendc.verifier import AscendcVerifier
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status

pytestmark = needs_pyasc
ROOT = Path(__file__).resolve().parents[3]
HERE = Limits(gates=("extract", "lower", "static"), timeout_s=10.0)
KERNEL = "// file: op_kernel/add_custom.cpp"
TILING = "// file: op_host/add_custom_tiling.h"


@pytest.fixture(scope="module")
def add():
    return load_task(ROOT / "tasks" / "ascendc" / "add", "ascendc")


@pytest.fixture(scope="module")
def cpp():
    return load_task(ROOT / "tests" / "fixtures" / "ascendc" / "add_custom", "ascendc")


@pytest.fixture(scope="module")
def front():
    return AscendcVerifier()


@pytest.fixture(scope="module")
def raw():
    return DslCheckOffForTests()


def _cpp(task, old: str, new: str, where: str = KERNEL) -> str:
    """The C++ reference with `old` replaced by `new` in the file after `where` only."""
    ref = task.reference
    head, _, rest = ref.partition(where)
    nxt = rest.find("// file: ")
    body, tail = (rest, "") if nxt < 0 else (rest[:nxt], rest[nxt:])
    assert old in body, old
    return head + where + body.replace(old, new, 1) + tail


def _judge(verifier, task, code, outside, family, code_want=None):
    """The verdict on the gates here (checked against `family` / `code_want`), then on
    every gate (never a pass, never a label better than the first)."""
    v = verifier.verify(task, outside.fill(code), HERE)
    outside.check(v, family, settle_s=15.0)
    if code_want is not None:
        assert v.code == code_want, (v.status, v.code, v.feedback[:600])
    full = verifier.verify(task, outside.fill(code), Limits(timeout_s=10.0))
    assert not full.passed and full.status is not Status.PASS, full.feedback[:600]
    assert_innocent_passes(lambda t, c: verifier.verify(t, c, HERE), task, task.reference)
    return v


# --- (a) sync removed --------------------------------------------------------------------


def test_a_setflag_whose_waitflag_is_gone_is_sync_unpaired(cpp, front, outside):
    code = _cpp(cpp, "        AscendC::WaitFlag<AscendC::HardEvent::MTE3_S>(EVENT_ID0);\n", "")
    assert "SetFlag<AscendC::HardEvent::MTE3_S>" in code
    v = _judge(front, cpp, code, outside, CANDIDATE_FAULT, "sync_unpaired")
    assert v.checks[-1].name == "static" and "op_kernel/add_custom.cpp" in v.checks[-1].detail


# --- (b) PyTorch / aclnn fallback ---------------------------------------------------------

DSL_TORCH = (
    dsl_reference()
    .replace("import asc\n", "import asc\nimport torch\n", 1)
    .replace("asc.add(zl, xv, yv, tile)", "torch.add(zl, xv, yv)")
)


@pytest.mark.parametrize(
    "code",
    [
        DSL_TORCH,
        # no import: the name alone
        replace("asc.add(zl, xv, yv, tile)", "torch.add(zl, xv, out=yv)"),
        replace("import asc\n", "import asc\nfrom torch_npu import npu_add\n"),
    ],
    ids=["import_torch", "torch_name", "torch_npu"],
)
def test_a_pytorch_fallback_in_the_dsl_is_rejected(code, add, front, outside):
    v = _judge(front, add, code, outside, {Status.REJECTED}, "torch_fallback")
    assert v.checks[-1].name == "extract" and v.checks[-1].detail.startswith("line ")


@pytest.mark.parametrize(
    "new",
    [
        "    at::Tensor out = at::add(at::empty({1}), at::empty({1}));\n",
        "    aclnnAdd(nullptr, nullptr, nullptr, nullptr);\n",
    ],
    ids=["aten", "aclnn"],
)
def test_a_framework_fallback_in_the_cpp_kernel_is_torch_fallback(new, cpp, front, outside):
    old = "    GET_TILING_DATA_WITH_STRUCT(AddCustomTilingKernel, tilingData, tiling);\n"
    code = _cpp(cpp, old, old + new)
    _judge(front, cpp, code, outside, {Status.REJECTED}, "torch_fallback")


# --- (c) tiling mismatch -------------------------------------------------------------------


@pytest.mark.parametrize(
    "how",
    ["kernel_reads_another_name", "kernel_struct_another_type", "header_type_only"],
)
def test_host_and_kernel_disagreeing_on_tiling_is_tiling_mismatch(how, cpp, front, outside):
    if how == "kernel_reads_another_name":  # through the host's own class
        code = _cpp(
            cpp,
            "    GET_TILING_DATA_WITH_STRUCT(AddCustomTilingKernel, tilingData, tiling);\n",
            "    GET_TILING_DATA(tilingData, tiling);\n",
        ).replace("tilingData.tileNum)", "tilingData.tileNumber)")
    elif how == "kernel_struct_another_type":  # the host writes tileNum as uint32_t
        code = _cpp(cpp, "    uint32_t tileNum;\n};", "    uint64_t tileNum;\n};")
    else:
        code = _cpp(
            cpp,
            "TILING_DATA_FIELD_DEF(uint32_t, tileNum);",
            "TILING_DATA_FIELD_DEF(uint16_t, tileNum);",
            TILING,
        )
    assert code != cpp.reference
    _judge(
        front, cpp, code, outside, {Status.COMPILE_ERROR, Status.WRONG_ANSWER}, "tiling_mismatch"
    )


# --- (d) hallucinated API --------------------------------------------------------------------


def test_a_hallucinated_dsl_api_is_api_signature_at_its_line(add, front, outside):
    code = replace("asc.add(zl, xv, yv, tile)", "asc.vector_add(zl, xv, yv, tile)")
    line = next(i for i, ln in enumerate(code.splitlines(), 1) if "asc.vector_add" in ln)
    v = _judge(front, add, code, outside, {Status.COMPILE_ERROR}, "api_signature")
    assert v.checks[-1].name == "lower"
    assert v.checks[-1].detail.startswith(f"line {line}:"), v.checks[-1].detail
    assert f">   {line} |" in v.feedback and "vector_add" in v.feedback


# --- (e) escapes through the interpreter -------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        replace("import asc\n", "import asc\nimport asc.runtime\n"),
        replace("import asc\n", "import asc\nfrom asc.runtime import jit\n"),
        replace(
            "    pipe = asc.TPipe()\n", "    c = asc.runtime.compiler\n    pipe = asc.TPipe()\n"
        ),
        with_helper("def helper():\n    __import__('os').system('id')\n"),
        with_helper("def helper():\n    getattr(asc, 'runtime')\n"),
        with_helper("def helper():\n    return ().__class__.__base__.__subclasses__()\n"),
        with_helper("def helper():\n    return open('{SECRET_TMP}').read()\n"),
        with_helper("def helper():\n    import os\n    return os.listdir('.')\n"),
        replace("import asc\n", "import asc\nimport os\n"),
        with_helper("def helper():\n    exec('import os')\n"),
        replace("@asc.jit\n", "@asc.jit\n@staticmethod\n"),
    ],
    ids=[
        "import_asc_runtime",
        "from_asc_runtime",
        "asc_runtime_attribute",
        "dunder_import",
        "getattr",
        "dunder_subclasses",
        "open",
        "import_os_in_helper",
        "import_os",
        "exec",
        "other_decorator",
    ],
)
def test_reaching_past_the_dsl_is_rejected(code, add, front, outside):
    v = _judge(front, add, code, outside, {Status.REJECTED})
    assert v.code in ("forbidden_import", "forbidden_call"), (v.code, v.feedback[:300])
    assert v.checks[-1].name == "extract"


# --- (f) the lowering's own files ----------------------------------------------------------------

# past the DSL check, a helper the kernel calls finds the nonce-named out dir (it is the
# lowering's cwd's only `lowered-*` dir) and attacks what the host reads there
_OUT = "    import os\n    out = [d for d in os.listdir('.') if d.startswith('lowered-')][0]\n"
RESULT_LINK = with_helper(
    f"def helper():\n{_OUT}    os.symlink('{{SECRET_TMP}}', os.path.join(out, 'result.json'))\n"
)
CPP_LINK = with_helper(
    f"def helper():\n{_OUT}"
    "    for k in ('float32_1024', 'float16_1024'):\n"
    "        os.symlink('{SECRET_TMP}', os.path.join(out, k + '.cpp'))\n"
)
# its own result and a C++ with no kernel in it, then out before the driver writes
PLANTED = with_helper(
    f"def helper():\n{_OUT}"
    "    with os.fdopen(os.open(os.path.join(out, 'result.json'), os.O_WRONLY | os.O_CREAT),"
    " 'w') as f:\n"
    '        f.write(\'{"ok": true, "variants": {}}\')\n'
    "    for k in ('float32_1024', 'float16_1024'):\n"
    "        fd = os.open(os.path.join(out, k + '.cpp'), os.O_WRONLY | os.O_CREAT)\n"
    "        os.write(fd, b'// PASS: lowered, verified, precision ok\\n')\n"
    "        os.close(fd)\n"
    "    os._exit(0)\n"
)
# a dir in place of result.json: the driver cannot write it
RESULT_DIR = with_helper(f"def helper():\n{_OUT}    os.mkdir(os.path.join(out, 'result.json'))\n")


@pytest.mark.parametrize(
    "code",
    [RESULT_LINK, CPP_LINK, PLANTED, RESULT_DIR],
    ids=["symlink_result", "symlink_cpp", "planted_result_and_cpp", "dir_for_result"],
)
def test_what_the_lowering_leaves_is_never_a_pass_of_its_own(code, add, raw, outside):
    v = _judge(raw, add, code, outside, {Status.COMPILE_ERROR, Status.RUNTIME_ERROR})
    assert v.code == "lowering_failed", (v.code, v.feedback[:600])
    assert v.checks[-1].name == "lower"
    assert "crucible-ascendc-" not in v.checks[-1].detail  # no host path in the verdict


def test_the_lowering_attacks_are_refused_at_the_front_door(add, front, outside):
    for code in (RESULT_LINK, CPP_LINK, PLANTED, RESULT_DIR):
        v = front.verify(add, outside.fill(code), HERE)
        assert (v.status, v.code) == (Status.REJECTED, "forbidden_import"), v.feedback[:300]
    outside.check(v, {Status.REJECTED})
