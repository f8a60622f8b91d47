"""Prompt builders: the structured instruction a model (or a training example) sees.

One instruction per task, built from the task record only, so that the prompt an LLM was
sent and the prompt an SFT export shows are the same text. Sections, in order:
requirement, interface constraints, platform/toolchain, dependencies, required output
format. A repair prompt continues that conversation with the failed attempt and the tool's
own feedback, trimmed to a budget.
"""

from __future__ import annotations

import json
from typing import Any

from verifiers import domain as domain_registry
from verifiers.contract import Task
from verifiers.domain import PromptStyle
from verifiers.feedback import trim

Message = dict[str, str]


SYSTEM = (
    "You are an expert engineer writing {language}. Answer with one fenced code block "
    "(```{fence}) holding the full solution, and nothing after it."
)

REPAIR_FEEDBACK_BUDGET = 2000  # characters of tool feedback a repair prompt shows


def style(domain: str) -> PromptStyle:
    """How prompts for `domain` ask for the answer: its descriptor's prompt style."""
    try:
        return domain_registry.get(domain).prompt
    except domain_registry.UnknownDomain:
        known = ", ".join(domain_registry.names())
        raise ValueError(f"no prompt style for domain {domain!r}; known: {known}") from None


def instruction(task: Task) -> str:
    """The user message for `task`: requirement, interface, platform, dependencies, format."""
    s = style(task.domain)
    parts = [f"## Requirement\n{task.requirement.strip()}"]
    parts.append(f"## Interface (must match exactly)\n{_interface_text(task)}")
    if task.platform:
        lines = [f"- {k}: {_scalar(v)}" for k, v in sorted(task.platform.items())]
        parts.append("## Platform and toolchain\n" + "\n".join(lines))
    deps = task.interface.get("dependencies") or task.platform.get("dependencies")
    parts.append(
        "## Dependencies\n"
        + ("\n".join(f"- {d}" for d in deps) if deps else "- none beyond the toolchain above")
    )
    parts.append(f"## Output format\nOne ```{s.fence} block with {s.output}.")
    return "\n\n".join(parts)


def instruction_messages(task: Task) -> list[Message]:
    s = style(task.domain)
    return [
        {"role": "system", "content": SYSTEM.format(language=s.language, fence=s.fence)},
        {"role": "user", "content": instruction(task)},
    ]


def answer(task: Task, code: str) -> Message:
    """An assistant turn holding `code` the way the instruction asked for it."""
    return {"role": "assistant", "content": f"```{style(task.domain).fence}\n{code.strip()}\n```"}


def feedback_message(status: str, feedback: str, budget: int = REPAIR_FEEDBACK_BUDGET) -> Message:
    """The user turn that reports a failed attempt: the status and the tool's own words."""
    text = trim(feedback.strip(), budget) if feedback.strip() else "(the tool said nothing)"
    return {
        "role": "user",
        "content": f"The verifier rejected this attempt: {status}.\n\nTool output:\n{text}\n\n"
        "Fix the code. Answer with the complete corrected solution in one code block.",
    }


def repair_messages(
    task: Task, code: str, status: str, feedback: str, budget: int = REPAIR_FEEDBACK_BUDGET
) -> list[Message]:
    """The conversation a repair model continues: task, failed attempt, tool feedback."""
    return [
        *instruction_messages(task),
        answer(task, code),
        feedback_message(status, feedback, budget),
    ]


def _interface_text(task: Task) -> str:
    iface = task.interface
    listings = iface.get("listings")
    if listings:  # source texts the task shows whole (the C function, its baseline assembly)
        rest = {k: v for k, v in iface.items() if k != "listings"}
        parts = [json.dumps(rest, indent=2, sort_keys=True)]
        for item in listings:
            parts.append(f"{item['title']}:\n```{item['fence']}\n{item['text'].rstrip()}\n```")
        return "\n\n".join(parts)
    ports = iface.get("ports")
    if ports:
        head = f"Top module `{iface.get('top', task.name)}`"
        if iface.get("kind"):
            head += f" ({iface['kind']})"
        lines = [head + ", ports:"]
        for p in ports:
            width = int(p.get("width", 1))
            rng = f"[{width - 1}:0] " if width > 1 else ""
            lines.append(f"- {p['direction']} {rng}{p['name']}")
        return "\n".join(lines)
    return json.dumps(iface, indent=2, sort_keys=True)


def _scalar(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)
