"""The Prefect UI as a user sees it: `crucible server` on a free port (its URL printed only
once the server answers), `crucible -v run` against it (no HTTP-client lines on the
console), then the flow run's page and its chart artifact in headless Chromium (Debian's
`chromium`): real pictures, with Crucible's log lines and this run's charts in them."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CRUCIBLE = [sys.executable, "-m", "flows.cli"]
CHROMIUM = shutil.which("chromium")
TASK = "mux4"

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (infra/install-toolchains.sh ui)"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(url: str, path: str, body: dict | None = None):
    req = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"content-type": "application/json"},
        method="POST" if body is not None else "GET",
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, json.loads(r.read() or b"null")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`crucible server` on a free port with its own PREFECT_HOME; what it printed, and
    whether the API answered at the moment its URL line was read."""
    tmp = tmp_path_factory.mktemp("ui")
    port = _free_port()
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    env.pop("PREFECT_API_URL", None)
    env.pop("PREFECT_UI_API_URL", None)
    proc = subprocess.Popen(
        [*CRUCIBLE, "server", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    url_seen = threading.Event()
    health_at_url: list[int] = []
    api = f"http://127.0.0.1:{port}/api"

    def read() -> None:
        for line in proc.stdout:
            lines.append(line)
            if "Prefect UI:" in line and not url_seen.is_set():
                try:
                    health_at_url.append(_api(api, "/health")[0])
                except OSError as e:
                    health_at_url.append(repr(e))
                url_seen.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert url_seen.wait(120), "".join(lines)[-3000:]
        yield {"api": api, "port": port, "lines": lines, "health": health_at_url, "tmp": tmp}
    finally:
        proc.send_signal(signal.SIGTERM)  # its reaper takes the Prefect server with it
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_server_prints_its_url_only_once_it_answers(server):
    """Over 30 s with its set-up (the module's): `crucible server`, a Prefect API server
    and its database migrations in a process of its own, started and waited on."""
    out = "".join(server["lines"])
    assert out.index("starting Prefect server...") < out.index("Prefect UI:")
    assert server["health"] == [200], out[-2000:]


@pytest.fixture(scope="module")
def ran(server):
    tmp = server["tmp"]
    shutil.copytree(ROOT / "tasks" / "rtl" / TASK, tmp / "catalog" / "rtl" / TASK)
    env = {**os.environ, "PREFECT_API_URL": server["api"], "PREFECT_HOME": str(tmp / "prefect")}
    cmd = [
        *CRUCIBLE,
        "-v",
        "run",
        "--tasks",
        str(tmp / "catalog"),
        "--domain",
        "rtl",
        "--lake",
        str(tmp / "lake"),
        "--stages",
        "generate,verify,repair,dedup",
    ]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    _, runs = _api(server["api"], "/flow_runs/filter", {})
    (run,) = [r for r in runs if r["state_type"] == "COMPLETED"]
    return {"id": run["id"], "stdout": p.stdout, "stderr": p.stderr}


def test_a_verbose_run_logs_to_the_server_and_keeps_http_lines_off_the_console(server, ran):
    """Over 30 s with its set-up: `crucible server` started, and a `crucible run -v`
    command against it, each its own process."""
    console = ran["stdout"] + ran["stderr"]
    assert "INFO ray_actors.verify: verifying" in console
    for noise in ("httpx", "httpcore", "HTTP Request"):
        assert noise not in console, [x for x in console.splitlines() if noise in x][:3]
    body = {"logs": {"flow_run_id": {"any_": [ran["id"]]}}, "limit": 200}
    _, found = _api(server["api"], "/logs/filter", body)
    assert any(g["name"] == "ray_actors.verify" and g["level"] == 20 for g in found)


def _screenshot(server, path: str, out: Path, height: int) -> Path:
    # a profile of its own: nothing shared with (or left in) the user's
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",  # as root
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={out.parent / 'chromium-profile'}",
        f"--screenshot={out}",
        "--virtual-time-budget=40000",
        f"--window-size=1400,{height}",
        f"http://127.0.0.1:{server['port']}{path}",
    ]
    subprocess.run(cmd, capture_output=True, timeout=120, check=True)
    return out


def _picture(png: Path) -> tuple[int, int, float]:
    """(width, distinct colours, share of light pixels: text and drawn content)."""
    from PIL import Image

    img = Image.open(io.BytesIO(png.read_bytes())).convert("RGB")
    grey = img.convert("L").histogram()
    light = sum(grey[160:]) / sum(grey)
    return img.width, len(img.getcolors(maxcolors=1 << 20) or ()), light


def test_the_flow_run_page_and_its_chart_render_in_chromium(server, ran):
    shots = server["tmp"] / "shots"
    shots.mkdir()
    run_png = _screenshot(server, f"/runs/flow-run/{ran['id']}", shots / "run.png", 1600)
    body = {"artifacts": {"flow_run_id": {"any_": [ran["id"]]}}}
    _, arts = _api(server["api"], "/artifacts/filter", body)
    (chart,) = [a for a in arts if a["key"] == "run-charts"]
    chart_png = _screenshot(server, f"/artifacts/artifact/{chart['id']}", shots / "chart.png", 1400)
    keep = os.environ.get("CRUCIBLE_UI_SHOTS")  # a directory to look at them afterwards
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for p in (run_png, chart_png):
            shutil.copy(p, Path(keep) / p.name)
    for png in (run_png, chart_png):
        width, colours, light = _picture(png)
        assert width == 1400 and colours > 500, (png, colours)
        # The UI's "Oops. Something went wrong." page (seen: a UI asking the API on
        # another port) is a dark page with one toast: ~45 KB, 0.1-0.2% light pixels.
        # The run page's log lines make ~1% light pixels, the white charts ~14%.
        assert png.stat().st_size > 80_000 and light > 0.005, (png, light)
