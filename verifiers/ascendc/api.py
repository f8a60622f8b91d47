"""Declarations of the AscendC APIs candidates use most, for the repair prompt: when
bisheng rejects a call, the feedback shows the candidate's line next to what the API
really takes.

Written from Huawei's public AscendC API reference (hiascend.com, "Ascend C API" pages,
e.g. atlasascendc_api_07_0101 for DataCopy; the vector, sync, TPipe / TQue / TBuf and
GlobalTensor pages) and pyasc's generated API docs (docs/python-api/language/generated/,
which quote the C++ prototypes, e.g. TPipe::FetchEventID). Abridged: the common overloads,
not every mask / repeat form.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Api:
    name: str  # as called: DataCopy, TQue::EnQue, ...
    decls: tuple[str, ...]
    note: str = ""

    def show(self) -> str:
        text = "\n".join(self.decls)
        return f"{text}\n// {self.note}" if self.note else text


_T = "template <typename T>\n__aicore__ inline "
_BIN = (
    _T + "void {n}(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, "
    "const LocalTensor<T>& src1Local, const int32_t& calCount);"
)
_UN = (
    "template <typename T, bool isSetMask = true>\n__aicore__ inline void {n}("
    "const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const int32_t& calCount);"
)
_SCALAR = (
    "template <typename T, bool isSetMask = true>\n__aicore__ inline void {n}("
    "const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const T& scalarValue, "
    "const int32_t& calCount);"
)

APIS: dict[str, Api] = {
    a.name: a
    for a in (
        Api(
            "DataCopy",
            (
                _T + "void DataCopy(const LocalTensor<T>& dstLocal, "
                "const GlobalTensor<T>& srcGlobal, const uint32_t calCount);",
                _T + "void DataCopy(const GlobalTensor<T>& dstGlobal, "
                "const LocalTensor<T>& srcLocal, const uint32_t calCount);",
                _T + "void DataCopy(const LocalTensor<T>& dstLocal, "
                "const LocalTensor<T>& srcLocal, const uint32_t calCount);",
                _T + "void DataCopy(const LocalTensor<T>& dstLocal, "
                "const GlobalTensor<T>& srcGlobal, const DataCopyParams& repeatParams);",
            ),
            "dst first; both sides of one element type T; calCount * sizeof(T) a multiple "
            "of 32 bytes (use DataCopyPad otherwise)",
        ),
        Api(
            "DataCopyPad",
            (
                _T + "void DataCopyPad(const LocalTensor<T>& dstLocal, "
                "const GlobalTensor<T>& srcGlobal, const DataCopyExtParams& dataCopyParams, "
                "const DataCopyPadExtParams<T>& padParams);",
                _T + "void DataCopyPad(const GlobalTensor<T>& dstGlobal, "
                "const LocalTensor<T>& srcLocal, const DataCopyExtParams& dataCopyParams);",
            ),
            "blockLen in DataCopyExtParams is in bytes",
        ),
        *(Api(n, (_BIN.format(n=n),), "dst, src0, src1 of one type T") for n in
          ("Add", "Sub", "Mul", "Div", "Max", "Min")),
        *(Api(n, (_UN.format(n=n),)) for n in
          ("Exp", "Ln", "Abs", "Relu", "Sqrt", "Rsqrt", "Reciprocal", "Not")),
        *(Api(n, (_SCALAR.format(n=n),), "the scalar is of the tensors' type T") for n in
          ("Muls", "Adds", "Maxs", "Mins")),
        Api(
            "ReduceSum",
            (
                _T + "void ReduceSum(const LocalTensor<T>& dstLocal, const LocalTensor<T>& "
                "srcLocal, const LocalTensor<T>& workLocal, const int32_t count);",
            ),
            "needs a work tensor; the sum lands in dstLocal[0]",
        ),
        Api(
            "ReduceMax",
            (
                _T + "void ReduceMax(const LocalTensor<T>& dstLocal, const LocalTensor<T>& "
                "srcLocal, const LocalTensor<T>& workLocal, const int32_t count, "
                "bool calIndex = 0);",
            ),
        ),
        Api(
            "Duplicate",
            (
                _T + "void Duplicate(const LocalTensor<T>& dstLocal, const T& scalarValue, "
                "const int32_t& calCount);",
            ),
        ),
        Api(
            "Cast",
            (
                "template <typename T1, typename T2>\n__aicore__ inline void Cast("
                "const LocalTensor<T1>& dstLocal, const LocalTensor<T2>& srcLocal, "
                "const RoundMode& round_mode, const uint32_t calCount);",
            ),
            "RoundMode::CAST_NONE / CAST_RINT / CAST_FLOOR / CAST_CEIL / CAST_ROUND / CAST_TRUNC",
        ),
        Api(
            "SetFlag",
            ("template <HardEvent event>\n__aicore__ inline void SetFlag(int32_t eventID);",),
            "pair every SetFlag<HardEvent::X>(id) with WaitFlag<HardEvent::X>(id)",
        ),
        Api(
            "WaitFlag",
            ("template <HardEvent event>\n__aicore__ inline void WaitFlag(int32_t eventID);",),
        ),
        Api(
            "PipeBarrier",
            ("template <pipe_t pipe>\n__aicore__ inline void PipeBarrier();",),
            "pipe_t: PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL",
        ),
        Api(
            "TPipe::InitBuffer",
            (
                "template <class T>\n__aicore__ inline bool InitBuffer(T& que, uint8_t num, "
                "uint32_t len);",
                "template <TPosition pos>\n__aicore__ inline bool InitBuffer(TBuf<pos>& buf, "
                "uint32_t len);",
            ),
            "len in bytes; a TQue takes (queue, buffer count, bytes), a TBuf (buf, bytes)",
        ),
        Api(
            "TPipe::FetchEventID",
            (
                "template <HardEvent evt>\n__aicore__ inline TEventID FetchEventID();",
                "__aicore__ inline TEventID FetchEventID(HardEvent evt);",
            ),
        ),
        Api(
            "TPipe::AllocEventID",
            ("template <HardEvent evt>\n__aicore__ inline TEventID AllocEventID();",),
            "release it with ReleaseEventID<evt>(id)",
        ),
        Api(
            "TQue::AllocTensor",
            (_T + "LocalTensor<T> AllocTensor();",),
            "free it with FreeTensor on the same queue",
        ),
        Api("TQue::EnQue", (_T + "bool EnQue(const LocalTensor<T>& tensor);",)),
        Api("TQue::DeQue", (_T + "LocalTensor<T> DeQue();",), "DeQue<T>() takes no argument"),
        Api("TQue::FreeTensor", (_T + "void FreeTensor(LocalTensor<T>& tensor);",)),
        Api(
            "TBuf::Get",
            (_T + "LocalTensor<T> Get();", _T + "LocalTensor<T> Get(uint32_t len);"),
            "a TBuf has no EnQue / DeQue: Get<T>() a view of its buffer",
        ),
        Api(
            "GlobalTensor::SetGlobalBuffer",
            (
                "__aicore__ inline void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize);",
                "__aicore__ inline void SetGlobalBuffer(__gm__ T* buffer);",
            ),
            "cast the GM_ADDR: (__gm__ T*)x + offset",
        ),
        Api("GetBlockIdx", ("__aicore__ inline int64_t GetBlockIdx();",)),
        Api("GetBlockNum", ("__aicore__ inline int64_t GetBlockNum();",)),
        Api(
            "GET_TILING_DATA",
            ("GET_TILING_DATA(tilingData, tilingArg)  // macro",),
            "declares `tilingData` of the op's registered tiling class from the kernel's "
            "GM_ADDR tiling argument; read fields as tilingData.field",
        ),
    )
}  # fmt: skip

_MEMBERS = {n.split("::", 1)[1]: n for n in APIS if "::" in n}
_QUOTED = re.compile(r"'([^']+)'")
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;()]*>)?\s*\(")


def _name_of(text: str) -> str | None:
    """An API name (a key of APIS) for a quoted C++ name such as `AscendC::DataCopy`,
    `TQue<...>::EnQue`, `EnQue`."""
    base = re.sub(r"<.*>", "", text)
    last = base.rsplit("::", 1)[-1].strip()
    if last in APIS:
        return last
    if last in _MEMBERS:
        return _MEMBERS[last]
    return None


def find(message: str, source_line: str = "") -> Api | None:
    """The API a diagnostic is about: a name quoted in the message first (`no matching
    function for call to 'DataCopy'`), else an API the candidate's line calls; for a name
    AscendC does not have (`no member named 'VecAdd' in namespace 'AscendC'`), the
    closest one it has."""
    for q in _QUOTED.findall(message):
        name = _name_of(q)
        if name:
            return APIS[name]
    for m in _CALLED.finditer(source_line):
        name = _name_of(m.group(1))
        if name:
            return APIS[name]
    m = re.search(r"no (?:member|template) named '(\w+)' in namespace 'AscendC'", message)
    if m:
        close = difflib.get_close_matches(
            m.group(1), [n.rsplit("::", 1)[-1] for n in APIS], n=1, cutoff=0.5
        )
        if close:
            return APIS[_name_of(close[0]) or close[0]]
    return None
