"""Print the requirements of Crucible's extras, one a line, read from pyproject.toml.

The node images install these in a layer of their own, before the source is copied in, so
a change to the code rebuilds only the last layer (the package itself, `--no-deps`).
Usage: python3 requirements.py pyproject.toml EXTRA...
"""

import sys
import tomllib

path, *extras = sys.argv[1:]
with open(path, "rb") as f:
    optional = tomllib.load(f)["project"]["optional-dependencies"]
seen: list[str] = []
for extra in extras:
    if extra not in optional:
        sys.exit(f"no extra {extra!r} in {path} (have: {', '.join(sorted(optional))})")
    for req in optional[extra]:
        if not req.startswith("crucible[") and req not in seen:
            seen.append(req)
print("\n".join(seen))
