"""The AscendC static rules: each has a failing case and a clean one. The kernels are
written for these tests (a scale-and-shift kernel in the CopyIn / Compute / CopyOut shape
AscendC's samples use), not taken from any benchmark."""

from __future__ import annotations

import pytest

from verifiers.ascendc import static
from verifiers.contract import Status

KERNEL = """#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t BUFFER_NUM = 2;

class KernelScale {
public:
    __aicore__ inline KernelScale() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t tile)
    {
        this->n = n;
        this->tile = tile;
        xGm.SetGlobalBuffer((__gm__ float *)x + GetBlockIdx() * n, n);
        yGm.SetGlobalBuffer((__gm__ float *)y + GetBlockIdx() * n, n);
        pipe.InitBuffer(qIn, BUFFER_NUM, tile * sizeof(float));
        pipe.InitBuffer(qOut, BUFFER_NUM, tile * sizeof(float));
        pipe.InitBuffer(tmp, tile * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t i = 0; i < n / tile; i++) {
            Load(i);
            Scale();
            Store(i);
        }
    }

private:
    __aicore__ inline void Load(uint32_t i)
    {
        LocalTensor<float> a = qIn.AllocTensor<float>();
        DataCopy(a, xGm[i * tile], tile);
        qIn.EnQue(a);
    }
    __aicore__ inline void Scale()
    {
        LocalTensor<float> a = qIn.DeQue<float>();
        LocalTensor<float> b = qOut.AllocTensor<float>();
        LocalTensor<float> t = tmp.Get<float>();
        Muls(t, a, 2.0f, tile);
        event_t ev = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
        SetFlag<HardEvent::V_S>(ev);
        WaitFlag<HardEvent::V_S>(ev);
        Adds(b, t, 1.0f, tile);
        qOut.EnQue(b);
        qIn.FreeTensor(a);
    }
    __aicore__ inline void Store(uint32_t i)
    {
        LocalTensor<float> b = qOut.DeQue<float>();
        DataCopy(yGm[i * tile], b, tile);
        qOut.FreeTensor(b);
    }
    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> qIn;
    TQue<QuePosition::VECOUT, BUFFER_NUM> qOut;
    TBuf<TPosition::VECCALC> tmp;
    GlobalTensor<float> xGm, yGm;
    uint32_t n, tile;
};

extern "C" __global__ __aicore__ void scale(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(td, tiling);
    KernelScale op;
    op.Init(x, y, td.totalLength, td.tileLength);
    op.Process();
}
"""

TILING = """#include "register/tilingdata_base.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(ScaleTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, totalLength);
  TILING_DATA_FIELD_DEF(uint32_t, tileLength);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(Scale, ScaleTilingData)
}
"""

HOST = """#include "scale_tiling.h"
#include "register/op_def_registry.h"
namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext *context)
{
    ScaleTilingData tiling;
    uint32_t n = context->GetInputShape(0)->GetStorageShape().GetShapeSize();
    context->SetBlockDim(8);
    tiling.set_totalLength(n / 8);
    tiling.set_tileLength(1024);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(),
                        context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    return ge::GRAPH_SUCCESS;
}
}
"""
K, H, T = "op_kernel/scale.cpp", "op_host/scale.cpp", "op_host/scale_tiling.h"


def device(kernel: str) -> list[static.Finding]:
    return static.check({K: kernel}, K, None, None, "device_only")


def both(kernel: str = KERNEL, host: str = HOST, tiling: str = TILING) -> list[static.Finding]:
    return static.check({H: host, T: tiling, K: kernel}, K, H, T, "host_device")


def codes(found: list[static.Finding]) -> list[str]:
    return [f.code for f in found]


def test_clean_kernel_and_host_pass_every_rule():
    assert device(KERNEL) == []
    assert both() == []


def test_every_rule_has_a_rationale():
    assert {r.code for r in static.RULES} == {
        "sync_unpaired",
        "queue_unbalanced",
        "torch_fallback",
        "tiling_mismatch",
    }
    assert all(len(r.rationale) > 40 for r in static.RULES)


# --- sync ---------------------------------------------------------------------------------


def test_setflag_without_waitflag_is_unpaired_at_its_line():
    bad = KERNEL.replace("        WaitFlag<HardEvent::V_S>(ev);\n", "")
    [f] = device(bad)
    assert (f.code, f.status) == ("sync_unpaired", Status.WRONG_ANSWER)
    assert f.line == bad.splitlines().index("        SetFlag<HardEvent::V_S>(ev);") + 1
    assert "WaitFlag<HardEvent::V_S>(ev)" in f.message


def test_waitflag_without_setflag_and_a_commented_set_does_not_count():
    bad = KERNEL.replace(
        "        SetFlag<HardEvent::V_S>(ev);\n", "        // SetFlag<HardEvent::V_S>(ev);\n"
    )
    assert codes(device(bad)) == ["sync_unpaired"]


def test_a_wait_on_another_event_is_unpaired():
    bad = KERNEL.replace("WaitFlag<HardEvent::V_S>(ev)", "WaitFlag<HardEvent::V_MTE3>(ev)")
    assert "sync_unpaired" in codes(device(bad))


def test_an_event_id_used_for_another_hardevent_than_fetched():
    bad = KERNEL.replace("SetFlag<HardEvent::V_S>(ev)", "SetFlag<HardEvent::MTE2_V>(ev)").replace(
        "WaitFlag<HardEvent::V_S>(ev)", "WaitFlag<HardEvent::MTE2_V>(ev)"
    )
    found = device(bad)
    assert codes(found) == ["sync_unpaired", "sync_unpaired"]  # the set and the wait
    assert all("fetched for HardEvent::V_S" in f.message for f in found)


def test_pyasc_lowered_form_and_intrinsics_pair():
    lowered = """extern "C" __global__ __aicore__ void k(__gm__ float* x) {
  int8_t v30 = AscendC::GetTPipePtr()->FetchEventID(AscendC::HardEvent::MTE2_V);
  AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(v30);
  AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(v30);
  AscendC::PipeBarrier<PIPE_V>();
  set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
}
"""
    assert device(lowered) == []
    assert codes(
        device(lowered.replace("  AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(v30);\n", ""))
    ) == ["sync_unpaired"]


def test_ping_pong_event_lists_pair_across_indices():
    text = """extern "C" __global__ __aicore__ void k(GM_ADDR x) {
    event_t evs[2] = {EVENT_ID0, EVENT_ID1};
    for (int i = 0; i < 8; i++) {
        WaitFlag<HardEvent::MTE3_MTE2>(evs[i % 2]);
        SetFlag<HardEvent::MTE3_MTE2>(evs[(i + 1) % 2]);
    }
}
"""
    assert device(text) == []


# --- queues -------------------------------------------------------------------------------


def test_a_tensor_never_freed_is_unbalanced():
    bad = KERNEL.replace("        qIn.FreeTensor(a);\n", "")
    [f] = device(bad)
    assert (f.code, f.status) == ("queue_unbalanced", Status.WRONG_ANSWER)
    assert "qIn" in f.message and "FreeTensor 0x" in f.message


def test_a_tensor_never_enqueued_is_unbalanced():
    bad = KERNEL.replace("        qOut.EnQue(b);\n", "")
    [f] = device(bad)
    assert f.code == "queue_unbalanced" and "EnQue 0x but DeQue 1x" in f.message


def test_one_dtype_arm_missing_its_free_is_flagged_the_others_are_not():
    arms = """        if constexpr (std::is_same_v<T, half>) {
            qIn.FreeTensor(a);
        } else {
            qIn.FreeTensor(a);
        }
"""
    good = KERNEL.replace("        qIn.FreeTensor(a);\n", arms)
    assert device(good) == []
    bad = good.replace("        } else {\n            qIn.FreeTensor(a);\n", "        } else {\n")
    [f] = device(bad)
    assert f.code == "queue_unbalanced" and "else arm" in f.message


def test_a_runtime_branch_is_any_of_its_arms_and_a_tbuf_needs_no_free():
    branchy = KERNEL.replace(
        "            Scale();\n",
        "            if (i % 2 == 0) {\n                Scale();\n            } else {\n"
        "                Scale();\n            }\n",
    )
    assert device(branchy) == []


# --- fallback -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "#include <torch/extension.h>",
        '#include "aclnnop/aclnn_add.h"',
        "static void f() { at::Tensor t; }",
        "static void f() { torch::add(x, y); }",
        "static void f() { c10::IValue v; }",
    ],
)
def test_a_framework_in_the_kernel_is_rejected(line):
    found = device(line + "\n" + KERNEL)
    assert codes(found)[:1] == ["torch_fallback"]
    assert found[0].status == Status.REJECTED and found[0].line == 1


def test_a_framework_in_a_comment_or_string_is_not_a_call():
    text = '// at::Tensor would be cheating\nconst char* s = "torch::add";\n' + KERNEL
    assert device(text) == []


def test_the_host_calling_a_builtin_aclnn_op_is_rejected():
    bad = HOST.replace(
        "    return ge::GRAPH_SUCCESS;",
        "    aclnnMulsGetWorkspaceSize(x, s, y, &ws, &exe);\n    return ge::GRAPH_SUCCESS;",
    )
    [f] = both(host=bad)
    assert (f.code, f.status, f.file) == ("torch_fallback", Status.REJECTED, H)


def test_the_host_defining_its_own_aclnn_entry_and_l0op_is_fine():
    own = HOST + (
        "namespace l0op { const aclTensor *Scale(const aclTensor *x, aclOpExecutor *e) "
        "{ return x; } }\n"
        "aclnnStatus aclnnScale(void *ws, uint64_t n, aclOpExecutor *e, aclrtStream s) "
        "{ auto y = l0op::Scale(nullptr, e); auto c = l0op::Contiguous(y, e); return 0; }\n"
    )
    assert both(host=own) == []
    assert codes(both(host=own.replace("l0op::Contiguous", "l0op::Muls"))) == ["torch_fallback"]


# --- tiling -------------------------------------------------------------------------------


def test_the_kernel_reading_a_field_the_tiling_lacks():
    bad = KERNEL.replace("td.tileLength", "td.tileNum")
    [f] = both(kernel=bad)
    assert (f.code, f.status, f.file) == ("tiling_mismatch", Status.COMPILE_ERROR, K)
    assert "tileNum" in f.message
    assert device(bad) == []  # Device-Only: the task's driver owns the tiling


def test_the_host_writing_a_field_the_tiling_lacks():
    bad = HOST.replace("set_tileLength", "set_tileLen")
    [f] = both(host=bad)
    assert (f.code, f.status, f.file) == ("tiling_mismatch", Status.COMPILE_ERROR, H)


def test_a_kernel_side_struct_must_have_the_hosts_layout():
    own = """struct ScaleTiling {
    uint32_t totalLength;
    uint32_t tileLength;
};
""" + KERNEL.replace(
        "GET_TILING_DATA(td, tiling);", "GET_TILING_DATA_WITH_STRUCT(ScaleTiling, td, tiling);"
    )
    assert both(kernel=own) == []
    swapped = own.replace("    uint32_t tileLength;\n", "    float tileLength;\n")
    [f] = both(kernel=swapped)
    assert (f.code, f.status) == ("tiling_mismatch", Status.WRONG_ANSWER)
    assert "field 2" in f.message


# --- the text -----------------------------------------------------------------------------


def test_blanking_keeps_lines_and_first_arms_keeps_one_configuration():
    text = 'a // c\n"s//x" /* b\n b */ z\n'
    out = static.blank(text)
    assert out.count("\n") == text.count("\n") and "c" not in out and "z" in out
    cfg = static.first_arms("x\n#if A\ny\n#else\nq\n#endif\nw\n")
    assert "y" in cfg and "q" not in cfg and cfg.count("\n") == 7


def test_pyasc_lowered_kernel_of_the_catalog_task_is_clean():
    from verifiers.catalog import load_task
    from verifiers.registry import verify

    task = load_task("tasks/ascendc/add")
    v = verify(task, task.reference)
    static_check = [c for c in v.checks if c.name == "static"]
    assert static_check and static_check[0].ok, v.checks
    cpp = [a for a in v.artifacts if a.kind == "ascendc_cpp"]
    assert cpp
    for a in cpp:
        name = f"lowered/{a.name}"
        assert static.check({name: a.data.decode()}, name, None, None, "device_only") == []


# one WaitFlag of several taken away: the pairing rule still finds a WaitFlag of that event
# and id elsewhere; the path rule counts them
PATHS = """#include "kernel_operator.h"
using namespace AscendC;
__aicore__ inline void Step(event_t e)
{
    SetFlag<HardEvent::MTE3_MTE2>(e);
    WaitFlag<HardEvent::MTE3_MTE2>(e);
}
__aicore__ inline void StepAligned(event_t e)
{
    SetFlag<HardEvent::MTE3_MTE2>(e);
    WaitFlag<HardEvent::MTE3_MTE2>(e);
}
__aicore__ inline void PingPong(event_t* ev, uint32_t n)
{
    for (uint32_t i = 0; i < 2; i++) {
        SetFlag<HardEvent::MTE3_MTE2>(ev[i]);
    }
    for (uint32_t i = 0; i < n; i++) {
        WaitFlag<HardEvent::MTE3_MTE2>(ev[i % 2]);
        SetFlag<HardEvent::MTE3_MTE2>(ev[i % 2]);
    }
    for (uint32_t i = 0; i < 2; i++) {
        WaitFlag<HardEvent::MTE3_MTE2>(ev[i]);
    }
}
extern "C" __global__ __aicore__ void k(GM_ADDR x, uint32_t aligned)
{
    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::MTE3_MTE2));
    event_t ev[2];
    if (aligned) {
        StepAligned(e);
    } else {
        Step(e);
    }
    PingPong(ev, 8);
}
"""


def test_a_waitflag_taken_from_one_path_is_caught_where_another_path_still_waits():
    clean = {"k.cpp": PATHS}
    assert static.check(clean, "k.cpp", None, None, "device_only") == []  # ping-pong too
    cut = PATHS.replace(
        "void StepAligned(event_t e)\n{\n    SetFlag<HardEvent::MTE3_MTE2>(e);\n"
        "    WaitFlag<HardEvent::MTE3_MTE2>(e);\n",
        "void StepAligned(event_t e)\n{\n    SetFlag<HardEvent::MTE3_MTE2>(e);\n",
    )
    assert cut != PATHS
    found = static.check({"k.cpp": cut}, "k.cpp", None, None, "device_only")
    assert [(f.code, f.status) for f in found] == [("sync_unpaired", Status.WRONG_ANSWER)]
    assert "HardEvent::MTE3_MTE2: SetFlag" in found[0].message and found[0].line == 10
    # the ping-pong's drain taken away: its prologue's sets are never waited on
    drained = PATHS.replace(
        "    for (uint32_t i = 0; i < 2; i++) {\n        WaitFlag<HardEvent::MTE3_MTE2>(ev[i]);\n"
        "    }\n",
        "",
    )
    assert drained != PATHS
    assert [
        f.code for f in static.check({"k.cpp": drained}, "k.cpp", None, None, "device_only")
    ] == ["sync_unpaired"]


def test_sets_and_waits_under_the_same_condition_are_not_judged_by_path():
    """`if (c) SetFlag ... if (c) WaitFlag`: paths lean both ways (the analysis cannot
    correlate the two conditions), so the path rule stays silent."""
    code = PATHS.replace(
        "    PingPong(ev, 8);\n",
        "    if (aligned > 1) { SetFlag<HardEvent::V_MTE3>(ev[0]); }\n"
        "    if (aligned > 1) { WaitFlag<HardEvent::V_MTE3>(ev[0]); }\n",
    )
    assert static.check({"k.cpp": code}, "k.cpp", None, None, "device_only") == []


HIDDEN = """#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void k(GM_ADDR x)
{
    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::MTE2_V));
    SetFlag<HardEvent::MTE2_V>(e);
#if 0
    WaitFlag<HardEvent::MTE2_V>(e);
#else
    PipeBarrier<PIPE_ALL>();
#endif
}
"""


def test_a_waitflag_hidden_in_an_if_0_arm_is_no_waitflag():
    """A hostile candidate keeps the pair in text only: no build compiles `#if 0` code, so
    the SetFlag stands alone (the `#else` arm is the one read); `#if 1` is the real pair."""
    found = static.check({"k.cpp": HIDDEN}, "k.cpp", None, None, "device_only")
    assert [(f.code, f.line) for f in found] == [("sync_unpaired", 6)]
    taken = HIDDEN.replace("#if 0", "#if 1")
    assert static.check({"k.cpp": taken}, "k.cpp", None, None, "device_only") == []
