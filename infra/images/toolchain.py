"""Print the tool versions of a node image as JSON: the same probe a verdict's `toolchain`
records (`Verifier.toolchain()`), for every domain whose descriptor names this image.

Run once at the end of an image's build (the result is kept in the image as
/etc/crucible/toolchain.json); `infra/build-images.sh` turns it into image labels
(`org.crucible.toolchain.<tool>=<version>`).
Usage: python toolchain.py IMAGE
"""

import json
import sys

from verifiers import domain as domains
from verifiers.registry import get_verifier

image = sys.argv[1]
carried = domains.by_image().get(image)
if not carried:
    sys.exit(f"no domain names the image {image!r} (known: {', '.join(domains.by_image())})")
tools: dict[str, str] = {}
for d in carried:
    verifier = get_verifier(d.name)
    missing = [t.binary for t in verifier.missing_tools()]
    if missing:
        sys.exit(f"image {image}: the {d.name} tools {', '.join(missing)} are not on PATH")
    tools.update(verifier.toolchain())
print(json.dumps({"image": image, "domains": [d.name for d in carried], "tools": tools}))
