"""The one adapter to CANN: the gates that need Huawei's toolchain or an NPU (placeholder:
filled in by the adapter change)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

CANN_GATES = ("compile", "precision", "speedup")


@dataclass(frozen=True)
class CannNode:
    bisheng: str
    home: str


def probe() -> CannNode | None:
    bisheng = shutil.which("bisheng")
    home = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")
    if bisheng and home and os.path.isdir(home):
        return CannNode(bisheng, home)
    return None


def missing() -> str:
    gone = []
    if shutil.which("bisheng") is None:
        gone.append("bisheng not on PATH")
    if not (os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")):
        gone.append("no CANN toolkit (ASCEND_HOME_PATH unset: source CANN's set_env.sh)")
    return "; ".join(gone) or "nothing"


def compile_gate(node: CannNode, ctx: object, settings: object) -> str:  # pragma: no cover
    raise NotImplementedError


def precision_gate(node: CannNode, ctx: object, settings: object) -> str:  # pragma: no cover
    raise NotImplementedError


def speedup_gate(node: CannNode, ctx: object, settings: object) -> str:  # pragma: no cover
    raise NotImplementedError
