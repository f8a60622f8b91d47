"""CAD task specs: `tasks/cad/<name>/task.toml` + ref.py (a CadQuery script).

The Task carries the reference script's text, so a `cad` node needs nothing but the JSONL
line. See tasks/README.md for the format.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verifiers.specfields import Field, check_fields, parse_python, read_task_file

COMPARE_MODES = ("absolute", "normalized")
DEFAULT_IOU_PASS = 0.99
# the surface gate: largest distance from a point of either surface to the other one, as a
# fraction of the reference's bounding-box diagonal (both modes), and the mean (Chamfer)
DEFAULT_SURFACE_PASS = 0.01
DEFAULT_CHAMFER_PASS = 0.002
EULER_AXES = set("XYZ")


def _fraction(v: Any) -> bool:
    return 0 < v <= 1


def _euler_order(v: Any) -> bool:
    return isinstance(v, str) and len(v) == 3 and set(v.upper()) <= EULER_AXES


HARNESS_FIELDS = (
    Field("reference", str, "the known-good CadQuery script, e.g. ref.py", required=False),
    Field("compare", str, f"one of {', '.join(COMPARE_MODES)}", check=lambda v: v in COMPARE_MODES),
    Field("iou_pass", (int, float), "an IoU threshold in (0, 1]", required=False, check=_fraction),
    Field(
        "surface_pass",
        (int, float),
        "the largest surface deviation allowed, a fraction of the reference's diagonal in (0, 1]",
        required=False,
        check=_fraction,
    ),
    Field(
        "chamfer_pass",
        (int, float),
        "the mean surface distance allowed, a fraction of the reference's diagonal in (0, 1]",
        required=False,
        check=_fraction,
    ),
    Field("euler", dict, "a [harness.euler] table (order, angles)", required=False),
)
EULER_FIELDS = (
    Field(
        "order",
        str,
        'three axis letters, the order the rotations are applied in, e.g. "XYZ"',
        check=_euler_order,
    ),
    Field(
        "angles",
        list,
        "three angles in degrees, one per axis of `order`",
        check=lambda v: len(v) == 3 and all(isinstance(a, (int, float)) for a in v),
    ),
)
INTERFACE_FIELDS = (
    Field("result", str, "the variable the script leaves its solid in (`result`)", required=False),
    Field("units", str, "mm", required=False, check=lambda v: v == "mm"),
)


def load_cad_spec(toml_path: Path, spec: dict) -> tuple[dict, dict, str | None]:
    harness = spec["harness"]
    check_fields(toml_path, harness, HARNESS_FIELDS, "harness.")
    check_fields(toml_path, spec["interface"], INTERFACE_FIELDS, "interface.")
    reference = None
    if "reference" in harness:
        reference = read_task_file(toml_path, "harness.reference", harness["reference"])
        parse_python(reference, toml_path, "harness.reference")
    euler = None
    if "euler" in harness:
        check_fields(toml_path, harness["euler"], EULER_FIELDS, "harness.euler.")
        euler = {
            "order": harness["euler"]["order"].upper(),
            "angles": [float(a) for a in harness["euler"]["angles"]],
        }
    iface = {
        "result": spec["interface"].get("result", "result"),
        "units": "mm",
        "language": "Python (CadQuery 2.8)",
    }
    h = {
        "compare": harness["compare"],
        "iou_pass": float(harness.get("iou_pass", DEFAULT_IOU_PASS)),
        "surface_pass": float(harness.get("surface_pass", DEFAULT_SURFACE_PASS)),
        "chamfer_pass": float(harness.get("chamfer_pass", DEFAULT_CHAMFER_PASS)),
        **({"euler": euler} if euler else {}),
    }
    return iface, h, reference
