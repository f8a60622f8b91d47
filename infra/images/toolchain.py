"""Print the tool versions of a node image as JSON: the same probe a verdict's `toolchain`
records (`Verifier.toolchain()`), for every domain whose descriptor names this image.

Also imports the domains' Python modules (`Domain.modules`): a library that installed but
cannot load (a missing system library) fails the build, not the first verification.
Run once at the end of an image's build (the result is kept in the image as
/etc/crucible/toolchain.json); `infra/build-images.sh` turns it into image labels
(`org.crucible.toolchain.<tool>=<version>`).
Usage: python toolchain.py IMAGE
"""

import importlib
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
    for module in d.modules:  # its Python stack must import here, not only install
        try:
            importlib.import_module(module)
        except ImportError as e:
            sys.exit(f"image {image}: the {d.name} module {module} does not import: {e}")
    verifier = get_verifier(d.name)
    missing = [t.binary for t in verifier.missing_tools()]
    if missing:
        sys.exit(f"image {image}: the {d.name} tools {', '.join(missing)} are not on PATH")
    tools.update(verifier.toolchain())
print(json.dumps({"image": image, "domains": [d.name for d in carried], "tools": tools}))
