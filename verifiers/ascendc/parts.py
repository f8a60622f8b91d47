"""A candidate's parts, per path: the kernel (and on Host+Device the host side and its
tiling header) out of one text.

A C++ candidate that writes several files puts each after a marker line of its own,
`// file: <path>` (the path one of the task's `files`); a Device-Only candidate may be the
kernel file alone, with no marker. A pyasc candidate is one Python file: nothing to split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKER = re.compile(r"^[ \t]*//[ \t]*file:[ \t]*(\S+)[ \t]*$", re.M)


class PartsError(ValueError):
    """The text is not the files the task asks for (what is wrong, for the feedback)."""


@dataclass(frozen=True)
class Parts:
    files: dict[str, str]  # path -> text, the task's files in its order
    kernel: str  # the kernel file's path
    host: str | None = None  # Host+Device: the host file's path
    tiling: str | None = None  # Host+Device: the tiling header's path (may be None)

    def text(self, which: str | None) -> str:
        return self.files.get(which, "") if which else ""


def split(code: str, files: list[str], path: str) -> Parts:
    """The task's `files` out of `code` (markers, or one unmarked kernel on Device-Only)."""
    marks = list(MARKER.finditer(code))
    if not marks:
        if len(files) != 1:
            raise PartsError(
                f"the task asks for {len(files)} files ({', '.join(files)}): put each after "
                "a line `// file: <path>`"
            )
        found = {files[0]: code}
    else:
        if code[: marks[0].start()].strip():
            raise PartsError("text before the first `// file:` line (put it in a file)")
        found = {}
        for m, nxt in zip(marks, [*marks[1:], None], strict=True):
            name = m.group(1)
            if name not in files:
                raise PartsError(
                    f"`// file: {name}` is not one of the task's files ({', '.join(files)})"
                )
            if name in found:
                raise PartsError(f"`// file: {name}` appears twice")
            found[name] = code[m.end() : nxt.start() if nxt else len(code)].strip("\n") + "\n"
        missing = [f for f in files if f not in found]
        if missing:
            raise PartsError(
                f"missing file(s): {', '.join(missing)} (each after `// file: <path>`)"
            )
    ordered = {f: found[f] for f in files}
    kernel = next((f for f in files if "kernel" in f.split("/")[0]), None) or _guess_kernel(ordered)
    if path == "device_only":
        return Parts(ordered, kernel)
    host = next((f for f in files if f != kernel and "tiling" not in f.rsplit("/", 1)[-1]), None)
    tiling = next((f for f in files if "tiling" in f.rsplit("/", 1)[-1]), None)
    return Parts(ordered, kernel, host, tiling)


def _guess_kernel(files: dict[str, str]) -> str:
    for name, text in files.items():
        if "__aicore__" in text and "__global__" in text:
            return name
    return next(iter(files))


def join(files: dict[str, str]) -> str:
    """The one-text form of several files (what `split` reads back)."""
    return "".join(f"// file: {name}\n{text.rstrip()}\n" for name, text in files.items())
