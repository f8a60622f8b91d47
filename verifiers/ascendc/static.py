"""Static checks on AscendC C++ (a C++ candidate's files, or pyasc's lowered kernel): a
table of named rules, each with the reason it exists. The text is read with its comments
and string literals blanked out (line numbers kept), so nothing said in a comment counts.

Statuses, decided once here:

- `sync_unpaired` and `queue_unbalanced` are `wrong_answer`: an unwaited `SetFlag`, a wait
  on an event nobody sets, a queue whose tensors are never dequeued or freed are real
  defects (a pipeline race that computes garbage, or a hang at the next `AllocTensor` /
  `DeQue`) that the NPU would show as a wrong result or a hang. They are honest mistakes a
  model should learn to repair, so not `rejected`: the repair export drops `rejected`
  turns as attacks (sql/export_sft_repair.sql), and a missing FreeTensor is no attack.
- `torch_fallback` is `rejected`: calling PyTorch / ATen / aclnn instead of writing the
  kernel is dodging the task, the anti-cheat case.
- `tiling_mismatch` is `compile_error` when a name is missing on one side (bisheng would
  stop there: the class `GET_TILING_DATA` declares has no such member, the host has no
  `set_<field>`), and `wrong_answer` when a kernel-side struct reads the host's bytes with
  another layout (it compiles, and reads garbage).

What the rules leave alone, on purpose (each a false positive on the expert kernels
otherwise, or past what a text scan can know):

- sync pairs are matched per translation unit (the kernel file and its headers), by
  HardEvent and event-id expression, with array indices folded (`ev[i]` and `ev[next]`
  are one id: a ping-pong list sets the next slot and waits on the current one);
- queue balance is counted along the call graph from each `__global__` entry, per queue,
  a branch being any of its arms and a loop body counted once: a queue is flagged only
  when no path balances it (AllocTensor = FreeTensor, EnQue = DeQue). Correlated
  conditions, counts that depend on the trip count, and queues passed by reference to a
  helper under another name are not followed (that helper's parameter is its own queue,
  and is checked only when the entry's path reaches a balanced use of it);
- the host may define its own op's aclnn entry points (`aclnn<Op>`, `aclnn<Op>GetWorkspaceSize`)
  and its own `l0op::` functions, and use CANN's layout helpers (Contiguous, ViewCopy,
  Transpose, Reshape, Cast) around them, as NPUKernelBench's TopKV3 expert does; calling
  any other aclnn op or l0op is the fallback.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import product

from verifiers.contract import Status


@dataclass(frozen=True)
class Finding:
    code: str  # taxonomy code
    status: str  # the verdict status it gives
    line: int | None  # 1-based line in `file`
    file: str
    message: str  # what is wrong, for the feedback
    rationale: str  # why the rule exists


# --- the text ---------------------------------------------------------------------------


def blank(text: str, strings: bool = True) -> str:
    """`text` with comments (and, if `strings`, string and char literals) replaced by
    spaces, newlines kept: offsets and line numbers are the original's."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            if not strings:
                i = j
                continue
            i += 1  # keep the quotes
            j -= 1
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = max(j, i + 1)
    return "".join(out)


_PP = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b[^\n]*", re.M)
_NEVER = re.compile(r"^[ \t]*#[ \t]*if[ \t]+(?:0+|false)[ \t]*$")


def first_arms(code: str) -> str:
    """`code` as one build configuration sees it: of each `#if` / `#elif` / `#else`
    group only the first arm is kept (the rest blanked, newlines kept). Which arm a real
    build takes is the build's business; one consistent configuration is what a flow
    count needs (both arms of an `#if`/`#else` would count twice)."""
    out, depth_skip, stack = list(code), 0, []  # stack: per open #if, "an arm was kept"
    last = 0
    for m in _PP.finditer(code):
        if depth_skip:
            for k in range(last, m.start()):
                if out[k] != "\n":
                    out[k] = " "
        kind = m.group(1)
        if kind in ("if", "ifdef", "ifndef"):
            stack.append(depth_skip > 0)
            if depth_skip:
                depth_skip += 1
            elif kind == "if" and _NEVER.match(m.group(0)):
                # `#if 0`: no build takes it, so code hidden there is not counted; the
                # next arm is the one kept
                stack[-1] = None
                depth_skip = 1
        elif kind in ("elif", "else") and stack:
            if stack[-1] is None:  # after an `#if 0`: this arm is the one kept
                stack[-1] = False
                depth_skip = 0
            elif not stack[-1]:
                depth_skip = max(depth_skip, 1)
        elif kind == "endif" and stack:
            outer_skipped = bool(stack.pop())
            if depth_skip and not outer_skipped:
                depth_skip = 0
            elif depth_skip:
                depth_skip -= 1
        last = m.end()
    if depth_skip:
        for k in range(last, len(code)):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


class Source:
    """One file: its text without comments and strings, and offset -> line."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.raw = text
        self.code = blank(text)
        self.nocomment = blank(text, strings=False)
        self.config = first_arms(self.code)
        self._nl = [i for i, c in enumerate(text) if c == "\n"]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self._nl, offset - 1) + 1


def _close(text: str, i: int, open_: str = "(", close: str = ")") -> int:
    """The index just past the bracket matching the one at `i` (len(text) if none)."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def _norm(expr: str) -> str:
    e = re.sub(r"\s+", "", expr)
    e = re.sub(r"\bthis->", "", e)
    e = re.sub(r"\bAscendC::", "", e)
    for _ in range(3):
        m = re.fullmatch(r"static_cast<[\w:]+>\((.*)\)|\((?:event_t|TEventID)\)(.*)", e)
        if not m:
            break
        e = m.group(1) or m.group(2)
    return re.sub(r"\[[^\[\]]*\]", "[]", e)


# --- rule: SetFlag / WaitFlag pairs ------------------------------------------------------

SYNC_WHY = (
    "a SetFlag nobody waits on leaves the event set, and a WaitFlag on an event nobody "
    "sets waits forever or on another stage's flag: either way the pipes race (reads "
    "before the copy lands, overwrites before the copy out) and the result is garbage"
)
_FLAG = re.compile(r"(?<![\w:])(?:AscendC\s*::\s*)?(SetFlag|WaitFlag)\s*<([^<>;{}()]*)>\s*\(")
_INTRIN = re.compile(r"(?<![\w:])(set_flag|wait_flag)\s*\(")
_FETCH = re.compile(
    r"\b(\w+)\s*=\s*[^;=]*?\b(?:FetchEventID|AllocEventID)\s*(?:<\s*([\w:\s]+?)\s*>)?\s*"
    r"\(\s*([\w:\s]*?)\s*\)"
)
_PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX", "ALL", "MTE4", "MTE5", "V2")


def _event(arg: str) -> str:
    return re.sub(r"^(?:AscendC::)?(?:HardEvent::)?", "", re.sub(r"\s+", "", arg))


def _sync_ops(src: Source) -> list[tuple[str, str, str, int]]:
    """(Set|Wait, event, id, offset) of every flag call in the file."""
    text, ops = src.config, []  # the arms one build takes (`#if 0` code is no call)
    for m in _FLAG.finditer(text):
        if "," in m.group(2):  # not a HardEvent (a helper's template pair)
            continue
        end = _close(text, m.end() - 1)
        ops.append((m.group(1)[:-4], _event(m.group(2)), _norm(text[m.end() : end - 1]), m.start()))
    for m in _INTRIN.finditer(text):
        end = _close(text, m.end() - 1)
        args = [a.strip() for a in text[m.end() : end - 1].split(",")]
        if len(args) != 3:
            continue
        src_pipe, dst_pipe = (re.sub(r"^PIPE_", "", a) for a in args[:2])
        if src_pipe in _PIPES and dst_pipe in _PIPES:
            kind = "Set" if m.group(1) == "set_flag" else "Wait"
            ops.append((kind, f"{src_pipe}_{dst_pipe}", _norm(args[2]), m.start()))
    return ops


def check_sync(unit: list[Source]) -> list[Finding]:
    ops = [(src, *op) for src in unit for op in _sync_ops(src)]
    keys = {(kind, ev, eid) for _, kind, ev, eid, _ in ops}
    found, seen = [], set()
    for src, kind, ev, eid, at in ops:
        other = "Wait" if kind == "Set" else "Set"
        if (other, ev, eid) not in keys and (kind, ev, eid) not in seen:
            seen.add((kind, ev, eid))
            found.append(
                Finding(
                    "sync_unpaired",
                    Status.WRONG_ANSWER,
                    src.line(at),
                    src.name,
                    f"{kind}Flag<HardEvent::{ev}>({eid}) has no {other}Flag<HardEvent::{ev}>"
                    f"({eid}) in the kernel",
                    SYNC_WHY,
                )
            )
    # an event id fetched for one HardEvent, set or waited as another
    for src in unit:
        fetched = [
            (m.start(), m.group(1), _event(m.group(2) or m.group(3) or ""))
            for m in _FETCH.finditer(src.code)
        ]
        for kind, ev, eid, at in _sync_ops(src):
            before = [(o, ev2) for o, var, ev2 in fetched if var == eid and o < at]
            if before and before[-1][1] and before[-1][1] != ev:
                found.append(
                    Finding(
                        "sync_unpaired",
                        Status.WRONG_ANSWER,
                        src.line(at),
                        src.name,
                        f"{kind}Flag<HardEvent::{ev}>({eid}): {eid} was fetched for "
                        f"HardEvent::{before[-1][1]}",
                        "an event id belongs to the HardEvent it was fetched for: used for "
                        "another, the flag is set on one pipe pair and waited on another",
                    )
                )
    return found


# --- rule: queues balanced ---------------------------------------------------------------

QUEUE_WHY = (
    "a TQue holds a fixed number of buffers: a tensor allocated and never freed, or "
    "enqueued and never dequeued, exhausts it and the next AllocTensor / DeQue blocks "
    "forever (or a DeQue with no EnQue waits on nothing)"
)
_QOP = re.compile(
    r"([A-Za-z_][\w\.\[\]]*(?:->[\w\.\[\]]+)*)\s*(?:\.|->)\s*"
    r"(?:template\s+)?(AllocTensor|EnQue|DeQue|FreeTensor)\b"
)
_KEYWORDS = frozenset(
    (
        "if",
        "for",
        "while",
        "switch",
        "return",
        "sizeof",
        "catch",
        "else",
        "do",
        "case",
        "new",
        "delete",
        "static_cast",
        "reinterpret_cast",
        "const_cast",
        "dynamic_cast",
        "decltype",
        "alignof",
        "noexcept",
    )
)
_FUNC = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;(){}]*(?:<[^<>;(){}]*>[^<>;(){}]*)*>)?\s*\(")
_OPS = ("AllocTensor", "EnQue", "DeQue", "FreeTensor")
MAX_PATHS = 256  # per queue; beyond that the queue is not judged


@dataclass
class _Func:
    name: str
    src: Source
    start: int  # body's `{`
    end: int  # past its `}`
    entry: bool


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\([^)\n]*\)((?:[^\n]*\\\n)*[^\n]*)", re.M)


def _functions(src: Source) -> list[_Func]:
    """Function definitions (not nested in another function's body), and function-like
    macros (a kernel entry often runs its class through one)."""
    text, out, i = src.config, [], 0
    for m in _DEFINE.finditer(text):
        out.append(_Func(m.group(1), src, m.start(2) - 1, m.end(2) + 1, False))
    while True:
        m = _FUNC.search(text, i)
        if not m:
            return out
        i = m.end()
        name = m.group(1)
        if name in _KEYWORDS or _in_define(text, m.start()):
            continue
        close = _close(text, m.end() - 1)
        tail = re.match(
            r"\s*(?:const\s*|override\s*|noexcept\s*|final\s*|->\s*[\w:<>]+\s*)*\{", text[close:]
        )
        if not tail:
            continue
        start = close + tail.end() - 1
        end = _close(text, start, "{", "}")
        head = text[
            max(text.rfind(";", 0, m.start()), text.rfind("}", 0, m.start()), 0) : m.start()
        ]
        out.append(_Func(name, src, start, end, "__global__" in head))
        i = end


def _in_define(text: str, at: int) -> bool:
    """Is `at` inside a #define's (continued) lines?"""
    ls = text.rfind("\n", 0, at) + 1
    while True:
        if re.match(r"[ \t]*#[ \t]*define\b", text[ls:]):
            return True
        if ls == 0 or text[ls - 2 : ls - 1] != "\\":
            return False
        ls = text.rfind("\n", 0, ls - 1) + 1


Effect = dict[str, frozenset[tuple[int, int, int, int]]]
_ZERO = (0, 0, 0, 0)


def _seq(a: Effect, b: Effect, zero: tuple[int, ...] = _ZERO) -> Effect | None:
    out: Effect = {}
    for q in a.keys() | b.keys():
        xs, ys = a.get(q, frozenset({zero})), b.get(q, frozenset({zero}))
        s = frozenset(tuple(u + v for u, v in zip(x, y, strict=True)) for x, y in product(xs, ys))
        if len(s) > MAX_PATHS:
            return None
        out[q] = s
    return out


def _alt(effects: list[Effect], zero: tuple[int, ...] = _ZERO) -> Effect:
    out: Effect = {}
    for q in {q for e in effects for q in e}:
        out[q] = frozenset(x for e in effects for x in e.get(q, frozenset({zero})))
    return out


class _Flow:
    """Per-queue (alloc, enque, deque, free) counts of every path through a function,
    calls followed into the unit's own functions."""

    def __init__(
        self,
        funcs: list[_Func],
        force: tuple[tuple[str, int], bool] | None = None,
        ops: Callable[[str, int, int], list[tuple[int, str, int]]] | None = None,
        width: int = 4,
    ) -> None:
        # what a statement does: (offset, key, index into the count vector); default the
        # queue calls (alloc, enque, deque, free) per queue
        self.ops = ops or _queue_ops
        self.zero = (0,) * width
        self.force = force  # ((file, offset) of a per-variant `if`, the arm it takes)
        self.variants: dict[tuple[str, int], tuple[Source, bool]] = {}  # seen: has an else?
        self.by_name: dict[str, list[_Func]] = {}
        for f in funcs:
            self.by_name.setdefault(f.name, []).append(f)
        self.memo: dict[int, Effect | None] = {}
        self.active: set[int] = set()
        self.first: dict[str, tuple[Source, int]] = {}

    def func(self, f: _Func) -> Effect | None:
        key = id(f)
        if key in self.memo:
            return self.memo[key]
        if key in self.active:  # recursion: counted as nothing
            return {}
        self.active.add(key)
        eff = self.block(f.src, f.start + 1, f.end - 1)
        self.active.discard(key)
        self.memo[key] = eff
        return eff

    def block(self, src: Source, i: int, end: int) -> Effect | None:
        eff: Effect | None = {}
        while eff is not None:
            i = self._skip(src.config, i, end)
            if i >= end:
                break
            step, i = self.stmt(src, i, end)
            eff = None if step is None else _seq(eff, step, self.zero)
        return eff

    @staticmethod
    def _skip(text: str, i: int, end: int) -> int:
        while i < end:
            if text[i].isspace() or text[i] == ";":
                i += 1
            elif text[i] == "#":  # a directive line (and its continuations)
                while i < end and text[i] != "\n":
                    i += 2 if text[i] == "\\" else 1
            else:
                break
        return i

    def stmt(self, src: Source, i: int, end: int) -> tuple[Effect | None, int]:
        text = src.config
        if text[i] == "{":
            j = _close(text, i, "{", "}")
            return self.block(src, i + 1, j - 1), j
        m = re.match(r"(if|for|while|switch)\b\s*(?:constexpr\s*)?\(", text[i:end])
        if m:
            head_end = _close(text, i + m.end() - 1)
            cond = self.simple(src, i, head_end)
            body, j = self.stmt(src, self._skip(text, head_end, end), end)
            if m.group(1) == "if":
                arms = [body]
                k = self._skip(text, j, end)
                has_else = bool(re.match(r"else\b", text[k:end]))
                if has_else:
                    other, j = self.stmt(src, self._skip(text, k + 4, end), end)
                    arms.append(other)
                else:
                    arms.append({})
                # one arm per dtype (`if constexpr`) or tiling key: each arm is a kernel
                # that really runs, so each is checked on its own (check_queues)
                if "constexpr" in m.group(0) or "TILING_KEY_IS" in text[i:head_end]:
                    key = (src.name, i)
                    self.variants.setdefault(key, (src, has_else))
                    if self.force and self.force[0] == key:
                        arms = [arms[0] if self.force[1] else arms[1]]
                if any(a is None for a in arms) or cond is None:
                    return None, j
                return _seq(cond, _alt(arms, self.zero), self.zero), j  # type: ignore[arg-type]
            if m.group(1) == "switch" and body is not None:
                return _seq(
                    cond, _alt([body, {}], self.zero), self.zero
                ) if cond is not None else None, j
            return (None if body is None or cond is None else _seq(cond, body, self.zero)), j
        m = re.match(r"do\b", text[i:end])
        if m:
            body, j = self.stmt(src, self._skip(text, i + 2, end), end)
            k = text.find(";", j, end)
            return body, (end if k < 0 else k + 1)
        m = re.match(r"(?:else|case\b[^:]*:|default\s*:)", text[i:end])
        if m and m.group(0) != "else":
            return {}, i + m.end()
        # a plain statement: up to `;` at depth 0 (a lambda's braces inside it included)
        j, depth = i, 0
        while j < end:
            c = text[j]
            if c in "({[":
                depth += 1
            elif c in ")}]":
                depth -= 1
            elif c == ";" and depth <= 0:
                break
            j += 1
        return self.simple(src, i, j), j + 1

    def simple(self, src: Source, i: int, j: int) -> Effect | None:
        """A statement without control flow: its queue calls and its calls, in order."""
        text, events = src.config, []
        if _INDIRECT.search(text, i, j):  # a call through a member pointer: not followed
            return None
        for at, q, op in self.ops(text, i, j):
            self.first.setdefault(q, (src, at))
            events.append((at, q, op))
        for m in _CALL.finditer(text, i, j):
            if m.group(1) in self.by_name and m.group(1) not in _OPS:
                events.append((m.start(), m.group(1), -1))
        eff: Effect | None = {}
        for _, name, op in sorted(events, key=lambda e: e[0]):
            if op == -1:
                callee = [self.func(f) for f in self.by_name[name]]
                if any(c is None for c in callee):
                    return None
                step: Effect = _alt(callee, self.zero)  # type: ignore[arg-type]
            else:
                vec = list(self.zero)
                vec[op] = 1  # type: ignore[index]
                step = {name: frozenset({tuple(vec)})}  # type: ignore[dict-item]
            eff = _seq(eff, step, self.zero) if eff is not None else None
            if eff is None:
                return None
        return eff


def _queue_ops(text: str, i: int, j: int) -> list[tuple[int, str, int]]:
    found = _QOP.finditer(text, i, j)
    return [(m.start(), _norm(m.group(1)), _OPS.index(m.group(2))) for m in found]


def _sync_range(text: str, i: int, j: int) -> list[tuple[int, str, int]]:
    """(offset, HardEvent, 0 for Set / 1 for Wait) of the flag calls in text[i:j]."""
    out = []
    for m in _FLAG.finditer(text, i, j):
        if "," not in m.group(2):
            out.append((m.start(), _event(m.group(2)), 0 if m.group(1) == "SetFlag" else 1))
    for m in _INTRIN.finditer(text, i, j):
        end = _close(text, m.end() - 1)
        args = [a.strip() for a in text[m.end() : end - 1].split(",")]
        if len(args) == 3:
            a, b = (re.sub(r"^PIPE_", "", x) for x in args[:2])
            if a in _PIPES and b in _PIPES:
                out.append((m.start(), f"{a}_{b}", 0 if m.group(1) == "set_flag" else 1))
    return out


_INDIRECT = re.compile(r"(?:->\*|\.\*)\s*\w+\s*\)\s*\(")
_TBUF_NAMES = re.compile(r"([A-Za-z_][\w\.\[\]]*(?:->[\w\.\[\]]+)*)\s*(?:\.|->)\s*Get\s*[<(]")
MAX_VARIANTS = 48  # per-variant ifs checked one arm at a time


def _entries(unit: list[Source]) -> tuple[list[_Func], list[_Func]]:
    """The unit's functions and where its paths start: the `__global__` entries, else the
    functions nobody calls."""
    funcs = [f for src in unit for f in _functions(src)]
    roots = [f for f in funcs if f.entry]
    if not roots:
        called = {m.group(1) for f in funcs for m in _FUNC.finditer(f.src.config, f.start, f.end)}
        roots = [f for f in funcs if f.name not in called]
    return funcs, roots


def check_queues(unit: list[Source]) -> list[Finding]:
    funcs, roots = _entries(unit)
    found: list[Finding] = []
    # a TBuf's tensors come from Get() and need no FreeTensor (an expert frees them anyway)
    flagged = {_norm(n) for src in unit for n in _TBUF_NAMES.findall(src.config)}
    for src in unit:
        for m in re.finditer(r"\bTBuf\s*<[^<>;]*(?:<[^<>;]*>[^<>;]*)*>\s*([^;(){}]+);", src.config):
            flagged |= {_norm(n.split("=")[0]) for n in m.group(1).split(",")}
    base = _Flow(funcs)
    _judge(base, roots, "", found, flagged)
    for key, (src, has_else) in list(base.variants.items())[:MAX_VARIANTS]:
        for arm in (True, False) if has_else else (True,):
            flow = _Flow(funcs, (key, arm))
            line = src.line(key[1])
            where = (
                f" when the `if` at {src.name}:{line} takes its {'first' if arm else 'else'} arm"
            )
            _judge(flow, roots, where, found, flagged)
    return found


def check_sync_paths(unit: list[Source]) -> list[Finding]:
    """Each HardEvent set as often as it is waited on along every path from each entry
    (calls followed; a loop's body counted once: a ping-pong's prologue sets, its body's
    wait-then-set and its drain's waits balance): one WaitFlag of several taken away is
    caught, which the pairing rule above (is there any WaitFlag of that event and id?)
    misses. Paths that lean both ways are not judged (see below)."""
    funcs, roots = _entries(unit)
    flow = _Flow(funcs, ops=_sync_range, width=2)
    found: list[Finding] = []
    flagged: set[str] = set()
    for root in roots:
        eff = flow.func(root)
        if eff is None:
            continue
        for ev, paths in sorted(eff.items()):
            off = [(s, w) for s, w in paths if s != w]
            # imbalances both ways are conditions the paths do not correlate (`if (c)
            # SetFlag ... if (c) WaitFlag`): not judged; one way only is a missing call
            if ev in flagged or not off or len({s > w for s, w in off}) > 1:
                continue
            flagged.add(ev)
            s, w = min(off, key=lambda p: abs(p[0] - p[1]))
            src, at = flow.first[ev]
            found.append(
                Finding(
                    "sync_unpaired",
                    Status.WRONG_ANSWER,
                    src.line(at),
                    src.name,
                    f"HardEvent::{ev}: SetFlag {s}x but WaitFlag {w}x on a path from {root.name}",
                    SYNC_WHY,
                )
            )
    return found


def _judge(flow: _Flow, roots: list[_Func], where: str, found: list, flagged: set) -> None:
    for root in roots:
        eff = flow.func(root)
        if eff is None:
            continue
        for q, paths in sorted(eff.items()):
            if q in flagged or any(a == f and e == d for a, e, d, f in paths):
                continue
            flagged.add(q)
            a, e, d, f = min(paths, key=lambda p: abs(p[0] - p[3]) + abs(p[1] - p[2]))
            src, at = flow.first[q]
            what = []
            if a != f:
                what.append(f"AllocTensor {a}x but FreeTensor {f}x")
            if e != d:
                what.append(f"EnQue {e}x but DeQue {d}x")
            found.append(
                Finding(
                    "queue_unbalanced",
                    Status.WRONG_ANSWER,
                    src.line(at),
                    src.name,
                    f"queue {q}: {' and '.join(what)} on every path from {root.name}{where}",
                    QUEUE_WHY,
                )
            )


# --- rule: no framework fallback -----------------------------------------------------------

FALLBACK_WHY = (
    "the task is to write the kernel: calling PyTorch, ATen, torch_npu or an aclnn / l0op "
    "operator computes the answer with CANN's or the framework's own implementation"
)
_FW_INCLUDE = re.compile(
    r"^[ \t]*#[ \t]*include[ \t]*[<\"][ \t]*((?:torch|ATen|aten|c10|torch_npu|aclnn\w*|"
    r"aclnnop|pybind11|Python)\b[^>\"]*)[>\"]",
    re.M,
)
_FW_CALL = re.compile(
    r"\b(?:(at|torch|c10|torch_npu|aclnnop)\s*::|(aclnn\w+)\s*\(|(l0op)\s*::\s*(\w+))"
)
# on the host: CANN's op-development infrastructure and layout helpers, not operators
_HOST_INCLUDE_OK = re.compile(r"^(?:aclnn/|aclnn_kernels/|(?:aclnnop/)?aclnn_util\.h$)")
LAYOUT_L0 = frozenset(
    {"Contiguous", "ViewCopy", "Transpose", "Reshape", "Cast", "ReFormat", "TransDataSpecial"}
)
_OWN_ACLNN = re.compile(r"\b(?:aclnnStatus|ACLNN_API\s+\w+)\s+(aclnn\w+)\s*\(")


def _own_names(files: list[Source]) -> set[str]:
    """What the candidate's own files define: functions in `namespace l0op`, aclnn entry
    points (`aclnnStatus aclnnX(...)`), and its headers' names."""
    own = set()
    for src in files:
        own.add(src.name.rsplit("/", 1)[-1])
        own |= set(_OWN_ACLNN.findall(src.code))
        for m in re.finditer(r"\bnamespace\s+l0op\s*\{", src.code):
            body = src.code[m.end() - 1 : _close(src.code, m.end() - 1, "{", "}")]
            own |= {f"l0op::{n}" for n in re.findall(r"\b(\w+)\s*\(", body)}
    return own


def check_fallback(kernel_unit: list[Source], host_unit: list[Source]) -> list[Finding]:
    found = []
    own = _own_names(host_unit)
    for src, host in [(s, False) for s in kernel_unit] + [(s, True) for s in host_unit]:
        for m in _FW_INCLUDE.finditer(src.nocomment):
            inc = m.group(1).strip()
            if host and (_HOST_INCLUDE_OK.match(inc) or inc.rsplit("/", 1)[-1] in own):
                continue
            found.append(_fallback(src, m.start(), f"#include <{inc}>", host))
        for m in _FW_CALL.finditer(src.code):
            if m.group(1):
                what = m.group(1) + "::"
            elif m.group(2):
                if host and m.group(2) in own:
                    continue
                what = m.group(2) + "(...)"
            else:
                name = m.group(4)
                if host and (name in LAYOUT_L0 or f"l0op::{name}" in own):
                    continue
                what = f"l0op::{name}"
            found.append(_fallback(src, m.start(), what, host))
    return found


def _fallback(src: Source, at: int, what: str, host: bool) -> Finding:
    side = "the host" if host else "the kernel"
    return Finding(
        "torch_fallback",
        Status.REJECTED,
        src.line(at),
        src.name,
        f"{side} uses {what}: write the operator in AscendC instead",
        FALLBACK_WHY,
    )


# --- rule: tiling fields agree -------------------------------------------------------------

TILING_WHY = (
    "the host serialises the tiling struct and the kernel reads the same bytes: a field "
    "the other side does not have is a build error, and a field of another type or order "
    "is read from the wrong offset"
)
_TDEF = re.compile(r"\bBEGIN_TILING_DATA_DEF\s*\(\s*(\w+)\s*\)(.*?)\bEND_TILING_DATA_DEF", re.S)
_TFIELD = re.compile(
    r"\bTILING_DATA_FIELD_DEF(?:_(ARR|STRUCT))?\s*\(\s*([\w:\s]+?)\s*,\s*(?:([^,()]+?)\s*,\s*)?(\w+)\s*\)"
)
_TREG = re.compile(r"\bREGISTER_TILING_DATA_CLASS\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_GET = re.compile(r"\bGET_TILING_DATA(?:_WITH_STRUCT\s*\(\s*(\w+)\s*,|\s*\()\s*(\w+)\s*,")
_SET = re.compile(r"\b(\w+)\s*(?:\.|->)\s*set_(\w+)\s*\(")
_STRUCT = re.compile(r"\b(?:struct|class)\s+(\w+)\s*\{")
_MEMBER = re.compile(
    r"^\s*((?:const\s+)?[\w:]+(?:\s*<[^;{}]*>)?)\s+(\w+)\s*(\[[^\]]*\])?\s*(?:=[^;]*)?;", re.M
)


def _tiling_classes(srcs: list[Source]) -> dict[str, list[tuple[str, str, int, Source]]]:
    """Class -> [(field, type, offset, file)] in order, from BEGIN_TILING_DATA_DEF."""
    out = {}
    for src in srcs:
        for m in _TDEF.finditer(src.code):
            fields = []
            for f in _TFIELD.finditer(m.group(2)):
                ftype = re.sub(r"\s+", " ", f.group(2)).strip()
                if f.group(1) == "ARR":
                    ftype += f"[{(f.group(3) or '').strip()}]"
                fields.append((f.group(4), ftype, m.start(2) + f.start(), src))
            out[m.group(1)] = fields
    return out


def _kernel_structs(srcs: list[Source]) -> dict[str, tuple[list[tuple[str, str]], Source, int]]:
    out = {}
    for src in srcs:
        for m in _STRUCT.finditer(src.code):
            body = src.code[m.end() : _close(src.code, m.end() - 1, "{", "}") - 1]
            fields = [
                (f.group(2), re.sub(r"\s+", " ", f.group(1)) + (f.group(3) or "").replace(" ", ""))
                for f in _MEMBER.finditer(body)
                if "(" not in f.group(0)
            ]
            out[m.group(1)] = (fields, src, m.start())
    return out


def _canon(t: str) -> str:
    t = re.sub(r"\bconst\s+|\bstd::", "", t).strip()
    return {"int": "int32_t", "unsigned int": "uint32_t", "unsigned": "uint32_t",
            "long": "int64_t", "float32_t": "float"}.get(t, t)  # fmt: skip


def check_tiling(kernel_unit: list[Source], host_unit: list[Source]) -> list[Finding]:
    classes = _tiling_classes(host_unit + kernel_unit)
    if not classes:
        return []
    found = []
    registered = [c for src in host_unit for _, c in _TREG.findall(src.code) if c in classes]
    default = registered or list(classes)
    all_fields = {f for c in classes.values() for f, *_ in c}

    def finding(status: Status, src: Source, at: int, msg: str) -> Finding:
        return Finding("tiling_mismatch", status, src.line(at), src.name, msg, TILING_WHY)

    # the host writes only fields the tiling defines (on a variable of a tiling class)
    typed = {
        v
        for src in host_unit
        for v in re.findall(rf"\b(?:{'|'.join(classes)})\s+(\w+)\s*[;({{=]", src.code)
    }
    for src in host_unit:
        for m in _SET.finditer(src.code):
            if m.group(1) in typed and m.group(2) not in all_fields:
                found.append(
                    finding(
                        Status.COMPILE_ERROR,
                        src,
                        m.start(),
                        f"the host calls {m.group(1)}.set_{m.group(2)}(...) but no "
                        f"BEGIN_TILING_DATA_DEF declares a field {m.group(2)}",
                    )
                )
    # the kernel reads only fields the tiling defines, with the layout the host wrote
    structs = _kernel_structs(kernel_unit)
    host_structs = {n for n in structs if n in classes}
    for src in kernel_unit:
        for m in _GET.finditer(src.code):
            cls, var = m.group(1), m.group(2)
            if cls and cls in structs and cls not in classes:
                found += _layout(cls, structs[cls], default, classes, finding)
                continue
            if cls and cls not in classes:
                continue  # a struct from a header the candidate did not write
            names = {f for c in ([cls] if cls else default) for f, *_ in classes[c]}
            for r in re.finditer(rf"\b{re.escape(var)}\s*(?:\.|->)\s*(\w+)", src.code):
                if r.group(1) not in names:
                    found.append(
                        finding(
                            Status.COMPILE_ERROR,
                            src,
                            r.start(),
                            f"the kernel reads {var}.{r.group(1)} but the tiling "
                            f"({', '.join([cls] if cls else default)}) has no field {r.group(1)}",
                        )
                    )
        for m in re.finditer(
            r"\b(?:reinterpret_cast\s*<|\(\s*)\s*(?:const\s+)?(?:__gm__\s+)?(\w+)\s*\*", src.code
        ):
            name = m.group(1)
            if name in structs and name not in classes and re.search(r"(?i)tiling", name):
                found += _layout(name, structs[name], default, classes, finding)
    for name in host_structs:  # the kernel redefines a host class
        found += _layout(name, structs[name], [name], classes, finding)
    return list({(f.file, f.line, f.message): f for f in found}.values())


def _layout(
    name: str,
    kstruct: tuple[list[tuple[str, str]], Source, int],
    against: list[str],
    classes: dict[str, list[tuple[str, str, int, Source]]],
    finding: Callable[..., Finding],
) -> list[Finding]:
    fields, src, at = kstruct
    mine = [(f, _canon(t)) for f, t in fields]
    for cls in against:
        theirs = [(f, _canon(t)) for f, t, *_ in classes[cls]]
        if mine == theirs:
            return []
    cls = against[0]
    theirs = [(f, _canon(t)) for f, t, *_ in classes[cls]]
    diff = next(
        (
            f"field {i + 1}: kernel {a[1]} {a[0]}, host {b[1]} {b[0]}"
            for i, (a, b) in enumerate(zip(mine, theirs, strict=False))
            if a != b
        ),
        f"kernel has {len(mine)} fields, host {len(theirs)}",
    )
    return [
        finding(
            Status.WRONG_ANSWER,
            src,
            at,
            f"the kernel's struct {name} is not the layout of the host's {cls} ({diff})",
        )
    ]


# --- the table ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    name: str
    code: str
    rationale: str
    host_device_only: bool = False


RULES = (
    Rule("sync_pairs", "sync_unpaired", SYNC_WHY),
    Rule("queues_balanced", "queue_unbalanced", QUEUE_WHY),
    Rule("no_fallback", "torch_fallback", FALLBACK_WHY),
    Rule("tiling_agrees", "tiling_mismatch", TILING_WHY, host_device_only=True),
)


def device_files(files: dict[str, str], kernel: str) -> list[str]:
    """The kernel file and the other files of its directory (its headers)."""
    top = kernel.rsplit("/", 1)[0] if "/" in kernel else None
    return [kernel] + [
        f for f in files if f != kernel and top is not None and f.rsplit("/", 1)[0] == top
    ]


def check(
    files: dict[str, str], kernel: str, host: str | None, tiling: str | None, path: str
) -> list[Finding]:
    """Every rule's findings on one candidate (fallback first: it decides the status)."""
    dev = device_files(files, kernel)
    kernel_unit = [Source(f, files[f]) for f in dev]
    host_unit = [Source(f, t) for f, t in files.items() if f not in dev]
    found = check_fallback(kernel_unit, host_unit if path == "host_device" else [])
    found += check_sync(kernel_unit)
    if not any(f.code == "sync_unpaired" for f in found):
        found += check_sync_paths(kernel_unit)
    found += check_queues(kernel_unit)
    if path == "host_device":
        found += check_tiling(kernel_unit, host_unit)
    return found
