"""The content key of a node image: one sha256 over everything its build reads.

    python3 infra/images/inputs.py infra/images/eda/Dockerfile [--base-id ID] [--root DIR]

What a build reads: its Dockerfile, every file of the build context (the repository root
less what `.dockerignore` excludes, the same rules the engine applies: a pattern matches
a path or any dir above it, `**` spans dirs, `!` re-includes, the last match wins) with
its executable bit (COPY keeps it) or a link's target, and the base image it starts
from (its id). `infra/build-images.sh` labels each image with this key
(`org.crucible.inputs`) and rebuilds only when the key of the tree it is given differs
from the label of the image it has; the container tests compare the two, which proves
that the image they run is the one this tree builds. Stdlib only: the build host runs it
with its own python3.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import stat
import sys
from pathlib import Path


def _regex(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go filepath.Match plus `**`) as a regex on a relpath."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def read_ignore(root: Path) -> list[tuple[bool, re.Pattern[str]]]:
    """(exclude, regex) per pattern of `root/.dockerignore`, in file order."""
    rules = []
    path = root / ".dockerignore"
    lines = path.read_text().splitlines() if path.is_file() else []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exclude = not line.startswith("!")
        pat = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        rules.append((exclude, _regex(pat)))
    return rules


def ignored(rel: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Whether the context leaves out `rel` (a path or any dir above it matched)."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: k + 1]) for k in range(len(parts))]
    out = False
    for exclude, rx in rules:
        if any(rx.match(p) for p in prefixes):
            out = exclude
    return out


def context_files(root: Path) -> list[str]:
    """The build context's files (relpaths, sorted), as the engine would send them."""
    rules = read_ignore(root)
    reincludes = any(not exclude for exclude, _ in rules)
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        if not reincludes:  # a dir left out whole: nothing below it can come back
            dirnames[:] = [d for d in dirnames if not ignored(rel_dir + d, rules)]
        files += [rel_dir + f for f in filenames if not ignored(rel_dir + f, rules)]
        # a link to a dir is walked by neither os.walk nor the engine's COPY: its target
        files += [
            rel_dir + d
            for d in dirnames
            if os.path.islink(os.path.join(dirpath, d)) and not ignored(rel_dir + d, rules)
        ]
    return sorted(files)


def image_inputs(root: Path, dockerfile: Path, base_id: str = "") -> str:
    h = hashlib.sha256()

    def put(*fields: bytes) -> None:
        for f in fields:
            h.update(len(f).to_bytes(8, "big") + f)

    put(b"crucible-image-inputs/1", base_id.encode(), dockerfile.read_bytes())
    for rel in context_files(root):
        p = root / rel
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            put(b"L", rel.encode(), os.readlink(p).encode())
        elif not stat.S_ISREG(st.st_mode):  # a socket or fifo: no content to copy
            put(b"S", rel.encode())
        else:
            mode = b"x" if st.st_mode & 0o111 else b"-"
            put(b"F", rel.encode(), mode, hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dockerfile", type=Path)
    ap.add_argument("--base-id", default="", help="the id of the image it starts FROM")
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    args = ap.parse_args(argv)
    if not args.dockerfile.is_file():
        print(f"inputs.py: no Dockerfile at {args.dockerfile}", file=sys.stderr)
        return 2
    print(image_inputs(args.root.resolve(), args.dockerfile, args.base_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
