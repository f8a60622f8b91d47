"""Lower a pyasc DSL candidate to AscendC C++: run by pyasc's own interpreter inside the
sandbox (`python -I -c <this file's text> job.json`), never imported by the host.

The candidate's module is not executed: its imports of `asc` (and `math`) are done, its
module-level constants evaluated as literals, its functions defined (their decorators
must be `asc.jit`), and pyasc's code generator walks the kernel's AST, then pyasc's MLIR
passes (with their verifier and sync insertion) and its translation to AscendC run as
`Compiler.run` runs them, without the `bisheng` step. What the candidate's kernel makes
pyasc call still runs in this process: everything this process writes is the candidate's
data (the C++ is judged like a C++ candidate; the host reads files by its own names).

Writes `<out>/result.json`: {"ok": true, "variants": {key: "<key>.cpp"}} or
{"error": {"type", "message", "line", "col", "key"}}, and one .cpp per variant.
"""

import ast
import json
import math
import os
import sys
import traceback


def _literal(node, env):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_literal(node.operand, env)
    if isinstance(node, ast.BinOp):
        a, b = _literal(node.left, env), _literal(node.right, env)
        ops = {
            ast.Add: a.__add__,
            ast.Sub: a.__sub__,
            ast.Mult: a.__mul__,
            ast.FloorDiv: a.__floordiv__,
            ast.Mod: a.__mod__,
            ast.Div: a.__truediv__,
        }
        if type(node.op) in ops:
            return ops[type(node.op)](b)
    raise ValueError("not a constant")


def _module_namespace(path, source):
    import asc

    tree = ast.parse(source, filename=path)
    ns = {"__name__": "candidate", "__file__": path, "asc": asc, "math": math}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue  # the host allowed only asc / math: both are in the namespace already
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            try:
                value = _literal(node.value, ns)
            except (ValueError, TypeError, ArithmeticError):
                continue
            for t in node.targets:
                ns[t.id] = value
        elif isinstance(node, ast.FunctionDef):
            code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
            exec(code, ns)  # a def: the body does not run; its decorator is asc.jit
    return ns


def _mock(arg, dtype):
    from asc.language.core.dtype import DataType
    from asc.runtime.jit import MockTensor, MockValue

    if arg["kind"] in ("in", "out"):
        return MockTensor(DataType(dtype if arg["dtype"] == "case" else arg["dtype"]))
    scalar = arg.get("dtype", "int32")  # "case": a float scalar of the case's dtype
    return MockValue(DataType(dtype if scalar == "case" else scalar))


def _lower(fn, variant):
    from asc.codegen.function_visitor import CodegenOptions
    from asc.codegen.specialization import Specialization
    from asc.runtime.compiler import CompileOptions, Compiler

    runtime, constexprs = {}, {}
    for a in variant["args"]:
        if a["kind"] == "constexpr":
            constexprs[a["name"]] = a["int"]
        else:
            runtime[a["name"]] = _mock(a, variant["dtype"])
    arg_types = {n: fn.get_arg_type(v) for n, v in runtime.items()}
    mod = fn._run_codegen(Specialization(arg_types, constexprs), CodegenOptions())
    compiler = Compiler.__new__(Compiler)  # its constructor looks for bisheng: not here
    compiler.options = CompileOptions()
    compiler.run_passes(mod)
    return Compiler.run_translation(mod)


def _where(exc, path, ns):
    """The candidate file's line (and column) an exception points at: pyasc's CodegenError
    carries the AST node of the function it was generating (lines counted from its `def`);
    else the innermost frame in the candidate."""
    import re

    from asc.runtime.jit import JITFunction

    node, src = getattr(exc, "node", None), getattr(exc, "src", None)
    if node is not None and hasattr(node, "lineno") and src is not None:
        for fn in ns.values():
            if isinstance(fn, JITFunction) and fn.src == src:
                first = next((i for i, t in enumerate(fn.src) if re.match(r"\s*def\s", t)), 0)
                return fn.starting_line_number + first + node.lineno - 1, node.col_offset
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == path:
            return frame.lineno, None
    return None, None


def _prototype(obj):
    """The AscendC prototype pyasc's docstring gives for a DSL function (its
    `.. code-block:: c++` after the prototype heading), or ''."""
    doc = getattr(obj, "__doc__", None) or ""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(".. code-block:: c++"):
            body = []
            for nxt in lines[i + 1 :]:
                if nxt.strip() and not nxt.startswith((" " * 8, "\t")):
                    break
                if nxt.strip().startswith(".."):
                    break
                body.append(nxt.strip())
            text = " ".join(x for x in body if x)
            if text:
                return text[:600]
    return ""


def _hints(line_text):
    """For each `asc.<name>` on the failing line: its DSL signature and AscendC prototype,
    or, for a name the DSL does not have, the closest names it does have with theirs."""
    import difflib
    import inspect
    import re

    import asc

    public = [n for n in dir(asc) if not n.startswith("_")]
    out = []
    for name in dict.fromkeys(re.findall(r"\basc\.([A-Za-z_]\w*)", line_text or "")):
        names = [name] if hasattr(asc, name) else difflib.get_close_matches(name, public, 3)
        if not hasattr(asc, name):
            out.append(
                f"asc.{name} does not exist in pyasc"
                + (f"; closest: {', '.join('asc.' + n for n in names)}" if names else "")
            )
        for n in names:
            obj = getattr(asc, n)
            try:
                sig = str(inspect.signature(obj))
            except (TypeError, ValueError):
                sig = "(...)"
            proto = _prototype(obj)
            out.append(f"asc.{n}{sig}" + (f"  // AscendC: {proto}" if proto else ""))
    return out[:6]


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        job = json.load(f)
    out = job["out"]
    path = os.path.abspath(job["source"])
    result = {}
    key = None
    ns = {}
    source = ""
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        ns = _module_namespace(path, source)
        fn = ns.get(job["kernel"])
        from asc.runtime.jit import JITFunction

        if not isinstance(fn, JITFunction):
            raise LookupError(f"no @asc.jit function named {job['kernel']} in the candidate")
        files = {}
        for variant in job["variants"]:
            key = variant["key"]
            cpp = _lower(fn, variant)
            name = f"{key}.cpp"
            with open(os.path.join(out, name), "w", encoding="utf-8") as f:
                f.write(cpp)
            files[key] = name
        result = {"ok": True, "variants": files}
    except BaseException as e:
        try:
            line, col = _where(e, path, ns)
        except Exception:
            line = col = None
        msg = getattr(e, "error_message", None) or str(e)
        try:
            hints = _hints(source.splitlines()[line - 1] if line else "")
        except Exception:  # hints are a courtesy
            hints = []
        result = {
            "error": {
                "type": type(e).__name__,
                "message": msg[:4000],
                "line": line,
                "col": col,
                "key": key,
                "hints": hints,
            }
        }
    with open(os.path.join(out, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
