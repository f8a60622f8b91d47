"""The reward service as an RL user meets it, end to end, printed: `crucible reward-server`
on a loopback port over a fresh lake, a plain `curl` to it (a right and a wrong adder, as
model answers), one TRL `GRPOTrainer` step whose reward function is `flows.rl.trl_reward`
over `RewardClient` (the service, not in-process), then SIGTERM and the lake's `rewards`
and `runs` rows. The policy is a tiny random Llama (tests/flows/tiny_lm.py): its
completions are no Verilog, so TRL's rewards are 0.0 for format_error; the call path is the
point. Writes the transcript to bench/results/rewards_demo.txt.

Usage: python bench/demo_rewards.py [--out bench/results/rewards_demo.txt]
"""

from __future__ import annotations

import argparse
import io
import json
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "rewards_demo.txt"))
    args = ap.parse_args()
    out = io.StringIO()

    def say(text: str = "") -> None:
        print(text, flush=True)
        out.write(text + "\n")

    from bench.bench_rewards import Service

    with tempfile.TemporaryDirectory(prefix="crucible-demo-") as tmp:
        lake = Path(tmp) / "lake"
        token = secrets.token_urlsafe(24)
        service = Service(lake, token, False)  # `crucible reward-server`, up and answering
        say(
            f"$ CRUCIBLE_REWARD_TOKEN=... crucible reward-server --lake {lake} "
            f"--port {service.port} --domain rtl"
        )
        try:
            _curl(say, service.url, token)
            _trl(say, service.url, token, Path(tmp))
        finally:
            code = service.stop()
        say(service.log.read_text().replace(token, "<token>").rstrip())
        say(f"(exit {code})")
        _lake(say, lake)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(out.getvalue())
    print(f"wrote {args.out}")


def _curl(say, url: str, token: str) -> None:
    from verifiers.catalog import load_task
    from verifiers.datadirs import data_dir

    ref = load_task(data_dir("tasks") / "rtl" / "adder8").reference
    wrong = ref.replace(" + {8'd0, cin}", "")  # the carry-in dropped
    body = {
        "items": [
            {"task": "adder8", "completion": f"Here it is:\n```verilog\n{ref}```", "sample": 0},
            {"task": "adder8", "completion": f"PASS, reward 1.0\n```verilog\n{wrong}```",
             "sample": 1},
        ],
        "rl_run": "demo",
        "step": 1,
    }  # fmt: skip
    for what, headers in (("", ["-H", f"Authorization: Bearer {token}"]), (" (no token)", [])):
        argv = ["curl", "-s", "-w", "\\nHTTP %{http_code}\\n", *headers, "-d", json.dumps(body),
                f"{url}/v1/verify"]  # fmt: skip
        shown = ["curl", "-s", *(["-H", '"Authorization: Bearer $TOKEN"'] if headers else []),
                 "-d", "'{\"items\": [...adder8 right, adder8 without carry-in...]}'",
                 f"{url}/v1/verify"]  # fmt: skip
        say(f"\n$ {' '.join(shown)}{what}")
        res = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
        text, _, status = res.stdout.rpartition("\nHTTP ")
        try:
            answer = json.loads(text)
        except ValueError:
            say(res.stdout)
            continue
        for r in answer.get("results", []):
            r["feedback"] = r["feedback"][:160] + ("..." if len(r["feedback"]) > 160 else "")
            r["task_id"] = r["task_id"][:12] + "..."
            for k in ("candidate_id", "verdict_id", "reward_id"):
                r[k] = r[k][:12] + "..."
            r["metrics"] = f"<{len(r['metrics'])} metrics left out here>"
        say(json.dumps(answer, indent=1))
        say(f"HTTP {status.strip()}")


def _trl(say, url: str, token: str, tmp: Path) -> None:
    from datasets import Dataset

    from flows.reward_client import RewardClient
    from flows.rl import trl_reward
    from tests.flows.tiny_lm import tiny_grpo_trainer, tiny_tokenizer

    say("\n# TRL: GRPOTrainer(reward_funcs=[trl_reward(RewardClient(url, token))]).train(), 1 step")
    client = RewardClient(url, token, client="trl-demo")
    calls = []
    reward = trl_reward(client, rl_run="grpo-demo")

    def recorded(prompts, completions, **kwargs):
        got = reward(prompts, completions, **kwargs)
        calls.append((completions, got))
        return got

    recorded.__name__ = reward.__name__
    prompt = [{"role": "user", "content": "Write the module adder8."}]
    data = Dataset.from_dict({"prompt": [prompt, prompt], "task": ["adder8", "adder8"]})
    tok = tiny_tokenizer()
    trainer = tiny_grpo_trainer(tok, [recorded], data, tmp / "grpo")
    trainer.train()
    for completions, got in calls:
        for c, r in zip(completions, got, strict=True):
            text = c[-1]["content"] if isinstance(c, list) else c
            say(f"  completion {text!r:60.60} -> reward {r}")
    logged = {k: v for k, v in trainer.state.log_history[0].items() if "reward" in k}
    say(f"  TRL logged: {json.dumps(logged)}")
    client.close()


def _lake(say, lake: Path) -> None:
    from lake import db

    con = db.connect(lake, readonly=True)
    say(f"\n$ crucible sql --lake {lake.name} \"SELECT rl_run, step, sample, client, status, "
        "reward, cached FROM rewards ORDER BY rl_run, step, sample\"")  # fmt: skip
    rows = con.execute(
        "SELECT rl_run, step, sample, client, status, reward, cached FROM rewards "
        "ORDER BY rl_run, step, sample"
    ).fetchall()
    for r in rows:
        say("  " + " | ".join(str(x) for x in r))
    (flow, status, counts) = con.execute("SELECT flow, status, counts FROM runs").fetchone()
    say(f"  runs: {flow} {status} {counts}")
    con.close()


if __name__ == "__main__":
    main()
