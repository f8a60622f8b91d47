"""A module's real port list (name, direction, width), as Yosys elaborates it."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path


class PortReadError(RuntimeError):
    pass


def read_ports(source: str, top: str, timeout_s: float = 30.0) -> list[dict]:
    """Ports of module `top` in `source`, default parameters applied.

    Runs Yosys bare: only for trusted sources (catalog references at ingest); candidate
    text goes through the sandbox in the verifier.
    """
    with tempfile.TemporaryDirectory(prefix="crucible-ports-") as tmp:
        src = Path(tmp) / "design.sv"
        src.write_text(source)
        script = f"read_verilog -sv {src}; hierarchy -top {top}; proc; write_json -compat-int"
        try:
            out = subprocess.run(
                ["yosys", "-q", "-p", script + f" {tmp}/ports.json"],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except FileNotFoundError:
            raise PortReadError("yosys is not installed: apt-get install -y yosys") from None
        except subprocess.TimeoutExpired:
            raise PortReadError(f"yosys took over {timeout_s}s to read the ports") from None
        if out.returncode != 0:
            err = (out.stderr or out.stdout).strip().splitlines()
            raise PortReadError(err[-1] if err else f"yosys exited {out.returncode}")
        data = json.loads((Path(tmp) / "ports.json").read_text())
    ports = data["modules"][top]["ports"]
    return [
        {"name": name, "direction": p["direction"], "width": len(p["bits"])}
        for name, p in ports.items()
    ]
