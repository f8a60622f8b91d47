"""A cache only the host writes: one sealed JSON file per key.

Toolchain results (compiles, a task's reference outputs and costs) are worth keeping
between verifications, and are exactly what a candidate would like to plant: "compiled
ok" for code that does not compile, the outputs its wrong code should have had. So the
cache is the host's alone: its dirs are 0700 and nothing of it is bound into a sandbox;
every entry is verified on read: one file named by its key, holding the key and the body,
sealed with an HMAC under a key only this host holds. An entry that fails any check is
dropped (the caller rebuilds it). Writes are atomic (temp file, then rename). Stdlib only.

An entry may also come from another host (a build node's compile, `seed`): its seal was
that host's, so it is checked as a read checks it (the key, and every field the subclass's
`decode` reads) and sealed again under this host's key; one that fails is never written.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

# what `seed` takes as a key: a sha256, as every content-addressed entry's (never a path)
SEED_KEY = re.compile(r"\A[0-9a-f]{64}\Z")


class SealedCache:
    """Entries (JSON-safe dicts) by key under `dir`, written and read by the host only."""

    def __init__(self, dir: Path, max_bytes: int = 64 * 2**20):
        self.dir = Path(dir)
        self.max_bytes = max_bytes

    def _secret(self) -> bytes:
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)  # an older cache may have been looser
        path = self.dir / ".hmac-key"
        if not path.exists():
            # written whole under a temp name, then linked into place: a process that
            # shares the cache (another verifier, another run on this host) reads the key
            # whole or not at all; when two make one, the first link wins for both
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".hmac-key.")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(os.urandom(32))
                with contextlib.suppress(FileExistsError):
                    os.link(tmp, path)
            finally:
                os.unlink(tmp)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            secret = f.read(64)
        if len(secret) != 32:
            raise OSError(f"{path}: a damaged cache key; remove {self.dir} to rebuild")
        return secret

    def _seal(self, body: Any) -> str:
        text = json.dumps(body, sort_keys=True)
        return hmac.new(self._secret(), text.encode(), hashlib.sha256).hexdigest()

    def path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def read(self, key: str) -> dict | None:
        """The body stored under `key`, or None (missing, or dropped: it failed a check)."""
        path = self.path(key)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            with os.fdopen(fd, "rb") as f:
                entry = json.loads(f.read(self.max_bytes + 1))
            body, mac = entry["body"], entry["mac"]
            good = hmac.compare_digest(mac, self._seal(body)) and body.get("key") == key
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            good = False
        if not good:
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        return body

    def decode(self, body: dict) -> Any:
        """What a subclass's `get` returns for a body whose seal held, or None when one of
        its fields is wrong (a type, a blob's sha256). A body is only a dict here."""
        return body

    def _decoded(self, body: Any) -> Any:
        try:
            return self.decode(body) if isinstance(body, dict) else None
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def body(self, key: str) -> dict | None:
        """The body stored under `key` as it is written (for another host's `seed`), or
        None when there is none or it fails a check `get` makes."""
        body = self.read(key)
        return body if body is not None and self._decoded(body) is not None else None

    def seed(self, key: Any, body: Any) -> bool:
        """Write another host's entry under this host's seal, if it passes every check a
        read makes (a sha256 key, the body's own key the same, the subclass's fields, the
        size a read takes); False, nothing written, when it does not."""
        if not isinstance(key, str) or not SEED_KEY.match(key) or not isinstance(body, dict):
            return False
        if body.get("key", key) != key or self._decoded(body) is None:
            return False
        if len(json.dumps({"body": body, "mac": "0" * 64})) > self.max_bytes:
            return False
        self.write(key, body)
        return True

    def write(self, key: str, body: dict) -> None:
        """Store `body` (its "key" field set to `key`) atomically."""
        body = {**body, "key": key}
        entry = json.dumps({"body": body, "mac": self._seal(body)})
        path = self.path(key)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(entry)
            os.replace(tmp, path)  # a half-written entry is never read
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
