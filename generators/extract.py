"""Code extraction from a model's answer.

The instruction asks for one fenced block in the domain's language. Models add prose, several
blocks (a helper, then the design, then a testbench), `<think>` reasoning, or run out of
tokens inside the block. The choice, in order: the last complete block in the domain's
language (or untagged) that defines the task's entry point by name; the same with any entry
point of the domain; an unterminated final block with one; the last complete block tagged
with the domain's language; an unfenced answer that plainly is code. Otherwise there is no
code, and the reason says why: the verifier's format gate then records the answer as
`format_error`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from generators.prompts import style
from verifiers import domain as domain_registry
from verifiers import pyast
from verifiers.contract import Task
from verifiers.domain import ExtractRules

# Fence tags a model uses for the same language; the prompt's own tag is in one of these.
# Language data, not per-domain: what a domain finds in an answer is its descriptor's
# `ExtractRules`.
LANGUAGE_TAGS: tuple[frozenset[str], ...] = (
    frozenset({"systemverilog", "sv", "verilog", "v", "svh", "vh"}),
    frozenset({"python", "py", "python3"}),
    frozenset({"c", "cpp", "c++", "cc", "cxx", "h", "hpp"}),
    frozenset({"asm", "assembly", "s", "gas", "x86", "nasm"}),
)

_THINK = re.compile(r"<(think|thinking)>.*?</\1>", re.S | re.I)
_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$")


@dataclass(frozen=True)
class Extraction:
    code: str | None
    reason: str
    text: str = ""  # the visible answer: reasoning removed

    @property
    def ok(self) -> bool:
        return self.code is not None


@dataclass(frozen=True)
class Block:
    lang: str  # lowercased fence tag, "" when untagged
    code: str
    complete: bool


def entry_name(task: Task) -> str | None:
    """The name the verifier looks for (the domain's descriptor says which: a field of the
    interface, such as the top module, or one fixed name), or none."""
    rules = _rules(task.domain)
    return rules.entry_name(task.interface) if rules is not None else None


def language_tags(domain: str) -> frozenset[str]:
    fence = style(domain).fence
    tags = {fence, *domain_registry.get(domain).extract.tags}
    for family in LANGUAGE_TAGS:
        if fence in family:
            tags |= family
    return frozenset(tags)


def strip_reasoning(answer: str) -> tuple[str, bool]:
    """The answer without `<think>` sections; True when it ended inside one."""
    text = _THINK.sub("", answer.replace("\r\n", "\n"))
    low = text.lower()
    # chat templates often open <think> in the prompt, so only the closing tag shows
    close = max(low.rfind("</think>"), low.rfind("</thinking>"))
    if close >= 0:
        text = text[text.index(">", close) + 1 :]
        low = text.lower()
    opened = [i for i in (low.find("<think>"), low.find("<thinking>")) if i >= 0]
    if opened:
        return text[: min(opened)], True
    return text, False


def fenced_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    fence, lang, body = "", "", []
    for line in text.split("\n"):
        if not fence:
            m = _OPEN.match(line)
            if m:
                fence, lang, body = m.group(1), m.group(2).strip("{}.").lower(), []
            continue
        stripped = line.strip()
        if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
            blocks.append(Block(lang, _tidy(body), True))
            fence = ""
        elif line.rstrip().endswith(fence) and stripped != fence:
            # a fence glued to the last code line: "endmodule```"
            body.append(line.rstrip()[: -len(fence)].rstrip(fence[0]))
            blocks.append(Block(lang, _tidy(body), True))
            fence = ""
        else:
            body.append(line)
    if fence:
        blocks.append(Block(lang, _tidy(body), False))
    return blocks


def extract_code(answer: str, domain: str, entry: str | None = None) -> Extraction:
    """The code in `answer` for `domain`; `entry` (see `entry_name`) is preferred if given."""
    fence = style(domain).fence  # an unknown domain raises here
    rules = domain_registry.get(domain).extract
    text, cut = strip_reasoning(answer)
    if not text.strip():
        why = "the answer ended inside <think> reasoning" if cut else "the answer is empty"
        return Extraction(None, why, text)
    blocks = [b for b in fenced_blocks(text) if b.code.strip()]
    tags = language_tags(domain)
    ours = [b for b in blocks if b.lang in tags or not b.lang]
    for pattern, what in _entry_patterns(rules, entry):
        found = [b for b in ours if pattern.search(b.code)]
        whole = [b for b in found if b.complete]
        if whole:
            return Extraction(whole[-1].code, f"last ```{fence} block {what}", text)
        if found:
            return Extraction(found[-1].code, f"unterminated ```{fence} block {what}", text)
    tagged = [b for b in ours if b.lang and b.complete]
    if tagged:
        return Extraction(tagged[-1].code, f"last ```{fence} block (no entry point seen)", text)
    if blocks:
        seen = sorted({b.lang or "untagged" for b in blocks})
        return Extraction(
            None,
            f"no {fence} code: only blocks tagged {', '.join(seen)} without an entry point",
            text,
        )
    if _reads_as_code(text, rules):
        code = text
        end = code.rfind(rules.cut_after) if rules.cut_after else -1
        if end >= 0:  # prose after the code is not part of it
            code = code[: end + len(rules.cut_after)]
        return Extraction(_tidy(code.split("\n")), "unfenced answer that is code", text)
    return Extraction(None, f"no fenced block, and the answer is not {fence} code", text)


def answer_code(extraction: Extraction, domain: str) -> str:
    """What a candidate holds: the code, else the visible answer itself (a `format_error`
    training negative), else a comment saying why there was nothing."""
    if extraction.code is not None:
        return extraction.code
    if extraction.text.strip():
        return extraction.text
    rules = _rules(domain)
    comment = rules.comment if rules is not None else "#"
    return f"{comment} no code in answer: {extraction.reason}\n"


def _rules(domain: str) -> ExtractRules | None:
    try:
        return domain_registry.get(domain).extract
    except domain_registry.UnknownDomain:
        return None


def _entry_patterns(rules: ExtractRules, entry: str | None) -> list[tuple[re.Pattern[str], str]]:
    pats = []
    if entry:
        rx = rules.named_pattern(entry) if rules.named_entry else rf"\b{re.escape(entry)}\b"
        pats.append((re.compile(rx, re.M), f"defining `{entry}`"))
    if rules.entry:
        pats.append((re.compile(rules.entry, re.M), "with an entry point"))
    return pats


def _reads_as_code(text: str, rules: ExtractRules) -> bool:
    if not rules.unfenced or not re.match(rules.unfenced, text, re.S):
        return False
    if rules.python:
        try:
            pyast.parse(text)
        except SyntaxError:
            return False
    return True


def _tidy(lines: list[str]) -> str:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return "\n".join(line.rstrip() for line in lines) + "\n" if lines else ""
