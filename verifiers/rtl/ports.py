"""A module's real port list (name, direction, width), as Yosys elaborates it.

Loading the catalog checks every reference's ports, so the answer is cached on disk by
content (the source, the top, the script and which yosys binary), one JSON file per key,
written atomically. An entry that does not read back as a port list is recomputed; a
cache dir that cannot be written only costs the yosys run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

# No `proc`: the ports are known once `hierarchy` has elaborated the top with its default
# parameters, and `proc` refuses valid SystemVerilog (Yosys 0.23: "Latch inferred ... from
# always_comb process" for an incomplete case). The JSON backend refuses processes, so
# they are deleted instead.
SCRIPT = "read_verilog -sv {src}; hierarchy -top {top}; delete p:*; write_json -compat-int {out}"
INSTALL_HINT = "yosys is not installed: apt-get install -y yosys"


class PortReadError(RuntimeError):
    pass


def default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "crucible" / "ports"


def read_ports(
    source: str, top: str, timeout_s: float = 30.0, cache_dir: Path | None = None
) -> list[dict]:
    """Ports of module `top` in `source`, default parameters applied.

    Runs Yosys bare: only for trusted sources (catalog references at ingest); candidate
    text goes through the sandbox in the verifier.
    """
    yosys = shutil.which("yosys")
    if yosys is None:
        raise PortReadError(INSTALL_HINT)
    cache = cache_dir or default_cache_dir()
    key = _cache_key(yosys, source, top)
    ports = _cached(cache, key)
    if ports is None:
        ports = _elaborate(yosys, source, top, timeout_s)
        _store(cache, key, ports)
    return ports


def _cache_key(yosys: str, source: str, top: str) -> str:
    # the binary's path, mtime and size stand for its version: no `yosys -V` run per call
    real = os.path.realpath(yosys)
    st = os.stat(real)
    ident = [SCRIPT, real, st.st_mtime_ns, st.st_size, top, source]
    return hashlib.sha256(json.dumps(ident).encode("utf-8", "surrogatepass")).hexdigest()


def _elaborate(yosys: str, source: str, top: str, timeout_s: float) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="crucible-ports-") as tmp:
        src, out_json = Path(tmp) / "design.sv", Path(tmp) / "ports.json"
        src.write_text(source)
        script = SCRIPT.format(src=src, top=top, out=out_json)
        try:
            out = subprocess.run(
                [yosys, "-q", "-p", script],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except FileNotFoundError:
            raise PortReadError(INSTALL_HINT) from None
        except subprocess.TimeoutExpired:
            raise PortReadError(f"yosys took over {timeout_s}s to read the ports") from None
        if out.returncode != 0:
            err = (out.stderr or out.stdout).strip().splitlines()
            raise PortReadError(err[-1] if err else f"yosys exited {out.returncode}")
        data = json.loads(out_json.read_text())
    ports = data["modules"][top]["ports"]
    return [
        {"name": name, "direction": p["direction"], "width": len(p["bits"])}
        for name, p in ports.items()
    ]


def _cached(cache: Path, key: str) -> list[dict] | None:
    try:
        entry = json.loads((cache / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent, unreadable, or not JSON (a torn or foreign file)
        return None
    if not (isinstance(entry, dict) and entry.get("key") == key and _is_ports(entry.get("ports"))):
        log.debug("port cache entry %s is malformed; recomputing", key)
        return None
    return entry["ports"]


def _is_ports(ports: object) -> bool:
    return isinstance(ports, list) and all(
        isinstance(p, dict)
        and isinstance(p.get("name"), str)
        and p.get("direction") in ("input", "output", "inout")
        and type(p.get("width")) is int
        and len(p) == 3
        for p in ports
    )


def _store(cache: Path, key: str, ports: list[dict]) -> None:
    tmp = None
    try:
        cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=cache, prefix=f".{key}.", suffix=".tmp", delete=False, encoding="utf-8"
        ) as f:
            tmp = f.name
            json.dump({"key": key, "ports": ports}, f)
        os.replace(tmp, cache / f"{key}.json")
    except OSError as e:  # a read-only or full cache costs the next call a yosys run
        log.debug("port cache %s not written (%s)", cache, e)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
