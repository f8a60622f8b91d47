"""Code extraction from the answer shapes models actually produce."""

from __future__ import annotations

import dataclasses

import pytest

from generators import prompts
from generators.extract import (
    answer_code,
    entry_name,
    extract_code,
    fenced_blocks,
    language_tags,
    strip_reasoning,
)
from verifiers import domain as domains
from verifiers.contract import Task
from verifiers.domain import Domain, ExtractRules, PromptStyle

ADDER = """\
module adder8 (input [7:0] a, input [7:0] b, input cin, output [7:0] sum, output cout);
    assign {cout, sum} = a + b + cin;
endmodule
"""
HELPER = """\
module half_add (input a, input b, output s, output c);
    assign {c, s} = a + b;
endmodule
"""
TB = """\
module tb;
    reg [7:0] a, b;
    initial $finish;
endmodule
"""


def rtl(answer: str, entry: str | None = "adder8"):
    return extract_code(answer, "rtl", entry)


@pytest.mark.parametrize("tag", ["systemverilog", "verilog", "sv", "SystemVerilog", "v", ""])
def test_one_block_in_any_verilog_tag(tag):
    ex = rtl(f"Sure.\n\n```{tag}\n{ADDER}```\n\nThis adds a, b and cin.")
    assert ex.code == ADDER
    assert ex.ok


def test_prefers_the_block_defining_the_top_over_a_later_testbench():
    ex = rtl(f"```verilog\n{ADDER}```\nAnd a testbench:\n```verilog\n{TB}```\n")
    assert ex.code == ADDER
    assert "adder8" in ex.reason


def test_last_block_with_the_entry_wins_over_an_earlier_draft():
    draft = ADDER.replace("a + b + cin", "a + b")
    ex = rtl(f"First try:\n```sv\n{draft}```\nFixed:\n```sv\n{ADDER}```\n")
    assert ex.code == ADDER


def test_without_a_name_any_module_is_an_entry_point_and_the_last_wins():
    ex = extract_code(f"```sv\n{HELPER}```\n```sv\n{ADDER}```\n", "rtl")
    assert ex.code == ADDER


def test_wrong_top_name_is_still_extracted_so_the_verifier_can_say_so():
    ex = rtl(f"```verilog\n{HELPER}```")
    assert ex.code == HELPER
    assert "entry point" in ex.reason


def test_unterminated_final_block_is_taken():
    ex = rtl(f"```systemverilog\n{ADDER}    // and then the answer was cut")
    assert ex.code is not None and ex.code.startswith("module adder8")
    assert "unterminated" in ex.reason


def test_a_complete_block_beats_an_unterminated_one():
    ex = rtl(f"```sv\n{ADDER}```\n```sv\nmodule adder8 (input a);\n  assign")
    assert ex.code == ADDER


def test_fence_glued_to_the_last_line():
    ex = rtl("```verilog\n" + ADDER.rstrip() + "```")
    assert ex.code == ADDER


def test_longer_fences_and_tildes():
    assert rtl(f"````verilog\n{ADDER}````").code == ADDER
    assert rtl(f"~~~verilog\n{ADDER}~~~").code == ADDER
    # a longer fence keeps a shorter one inside as content
    nested = f"````markdown\n```verilog\n{ADDER}```\n````"
    assert fenced_blocks(nested)[0].lang == "markdown"


def test_blocks_in_another_language_only():
    ex = rtl("```python\nprint('adder')\n```\n")
    assert ex.code is None
    assert "python" in ex.reason


def test_think_is_stripped_before_extraction():
    draft = "maybe ```verilog\nmodule adder8(); endmodule\n```"
    answer = f"<think>\n{draft}\n</think>\n```sv\n{ADDER}```"
    assert rtl(answer).code == ADDER
    # a chat template that opens <think> itself leaves only the closing tag in the answer
    assert rtl(f"reasoning about adders\n</think>\n\n```sv\n{ADDER}```").code == ADDER


def test_answer_cut_inside_think():
    ex = rtl("<think>\nLet me design module adder8 carefully. First")
    assert ex.code is None
    assert "<think>" in ex.reason
    assert answer_code(ex, "rtl").startswith("// no code in answer:")


def test_unfenced_answer_that_is_code():
    head = "// 8-bit adder\n`timescale 1ns/1ps\n"
    ex = rtl(head + ADDER + "\nThis module adds the operands.\n")
    assert ex.code == head + ADDER
    assert "unfenced" in ex.reason


def test_prose_is_no_code_and_becomes_the_candidate_text():
    answer = "The module adds a and b; module adder8 needs a carry.\nUse assign."
    ex = rtl(answer)
    assert ex.code is None
    assert answer_code(ex, "rtl") == answer


def test_empty_answer_becomes_a_comment_in_the_domain_language():
    ex = extract_code("", "cad")
    assert ex.code is None and ex.reason == "the answer is empty"
    assert answer_code(ex, "cad").startswith("# no code in answer")
    assert answer_code(extract_code("  \n", "rtl"), "rtl").startswith("// no code")


def test_python_domains():
    model = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    pass\n"
    helper = "def util():\n    return 1\n"
    ex = extract_code(f"```py\n{model}```\nusage:\n```python\n{helper}```", "cuda", "ModelNew")
    assert ex.code == model
    assert extract_code(model, "triton").code == model  # unfenced, parses
    bad = "import torch\nclass ModelNew(:\n"
    assert extract_code(bad, "triton").code is None  # unfenced but not Python


# Two domains of this test's own, declared the way a new domain declares itself: a C file
# for a microcontroller and x86-64 assembly. Nothing in generators/ names them.
_LEAD_C = r"(?:\s*(?://[^\n]*|/\*.*?\*/))*\s*"
MCU = Domain(
    name="test_mcu",
    verifier="tests.none:Verifier",
    spec_loader="tests.none:load",
    resource="cpu",
    install="nothing",
    prompt=PromptStyle("C for a test MCU", "c", "one C source file"),
    extract=ExtractRules(
        entry=r"^[A-Za-z_][\w \t*]*\b[A-Za-z_]\w*\s*\([^;{]*\)\s*\{",
        named_entry=r"^[A-Za-z_][\w \t*]*\b{name}\s*\(",
        unfenced=r"\A" + _LEAD_C + r"#\s*include\b",
        comment="//",
        entry_field="entry",
        tags=("cuda", "cu"),  # C++ fences models also use for device code
    ),
    syntax="cpp",
    gates=(("compile", "build"), ("run", "run")),
)
ASM = dataclasses.replace(
    MCU,
    name="test_asm",
    prompt=PromptStyle("x86-64 assembly (GNU as)", "asm", "the assembly of the function"),
    extract=ExtractRules(
        entry=r"^\s*[A-Za-z_.$][\w.$]*:",
        named_entry=r"^\s*{name}:",
        unfenced=r"\A(?:\s*(?:#|//)[^\n]*)*\s*\.(?:text|globl|global|intel_syntax|section)\b",
        entry_const="f",
    ),
    syntax="asm",
)


@pytest.fixture
def own_domains():
    for d in (MCU, ASM):
        domains.register(d)
    try:
        yield
    finally:
        for d in (MCU, ASM):
            domains.unregister(d.name)


def test_cad_python():
    cad = "import cadquery as cq\nresult = cq.Workplane().box(1, 2, 3)\n"
    assert extract_code(f"```python\n{cad}```", "cad").code == cad
    assert extract_code(cad, "cad").code == cad  # unfenced, parses


def test_a_registered_descriptor_drives_extraction(own_domains):
    c = "#include <stdint.h>\n\nint main(void) {\n    return 0;\n}\n"
    helper = "static int twice(int x) {\n    return 2 * x;\n}\n"
    assert extract_code(f"```cpp\n{c}```", "test_mcu").code == c
    assert extract_code(c, "test_mcu").code == c  # unfenced: the descriptor's `unfenced`
    # the named entry point beats a later block with another function
    ex = extract_code(f"```c\n{c}```\n```c\n{helper}```", "test_mcu", "main")
    assert ex.code == c and "`main`" in ex.reason
    assert answer_code(extract_code("", "test_mcu"), "test_mcu").startswith("// no code")
    task = Task("t", "test_mcu", "f", 1, "r", {"entry": "main"}, {}, None, {})
    assert entry_name(task) == "main"  # the descriptor's entry_field
    asm = ".text\n.globl f\nf:\n    mov %rdi, %rax\n    ret\n"
    assert extract_code(f"```asm\n{asm}```", "test_asm").code == asm
    assert extract_code(f"```s\n{asm}```", "test_asm").code == asm
    assert extract_code(asm, "test_asm").code == asm
    assert entry_name(dataclasses.replace(task, domain="test_asm")) == "f"  # entry_const
    assert answer_code(extract_code("", "test_asm"), "test_asm").startswith("# no code")


def test_a_registered_descriptor_drives_the_prompt(own_domains):
    task = Task("t", "test_mcu", "f", 1, "Blink.", {"entry": "main"}, {}, None, {})
    assert prompts.style("test_mcu") is MCU.prompt
    system, user = prompts.instruction_messages(task)
    assert "writing C for a test MCU" in system["content"] and "```c)" in system["content"]
    assert "One ```c block with one C source file." in user["content"]
    assert prompts.answer(task, "int x;")["content"] == "```c\nint x;\n```"


def test_cut_after_ends_an_unfenced_answer(own_domains):
    rules = dataclasses.replace(MCU.extract, cut_after="}")
    domains.register(dataclasses.replace(MCU, extract=rules), overwrite=True)
    c = "#include <stdint.h>\nint main(void) {\n    return 0;\n}\n"
    assert extract_code(c + "\nThat is all.\n", "test_mcu").code == c


def test_unknown_domain():
    with pytest.raises(
        ValueError, match="no prompt style for domain 'no_such'; known: ascendc, cad"
    ):
        prompts.style("no_such")
    with pytest.raises(ValueError, match="no prompt style"):
        extract_code("```c\nint x;\n```", "no_such")
    assert entry_name(Task("t", "no_such", "f", 1, "r", {"top": "m"}, {}, None, {})) is None
    assert answer_code(extract_code("", "cad"), "no_such").startswith("# no code")


def test_language_tags_and_entry_name(own_domains):
    assert {"verilog", "sv", "systemverilog"} <= language_tags("rtl")
    assert {"c", "cpp", "cuda"} <= language_tags("test_mcu")
    assert {"asm", "s", "nasm"} <= language_tags("test_asm")
    task = Task("t", "rtl", "f", 1, "r", {"top": "adder8"}, {}, None, {})
    assert entry_name(task) == "adder8"
    assert entry_name(dataclasses.replace(task, domain="cuda")) == "ModelNew"
    assert entry_name(dataclasses.replace(task, domain="cad")) is None


def test_crlf_and_reasoning_tags():
    text, cut = strip_reasoning("<thinking>x</thinking>\r\nok")
    assert (text, cut) == ("\nok", False)
    assert rtl(f"```verilog\r\n{ADDER.replace(chr(10), chr(13) + chr(10))}```").code == ADDER
