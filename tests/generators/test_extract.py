"""Code extraction from the answer shapes models actually produce."""

from __future__ import annotations

import pytest

from generators.extract import (
    answer_code,
    entry_name,
    extract_code,
    fenced_blocks,
    language_tags,
    strip_reasoning,
)
from verifiers.contract import Task

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


def test_cad_and_c_and_asm():
    cad = "import cadquery as cq\nresult = cq.Workplane().box(1, 2, 3)\n"
    assert extract_code(f"```python\n{cad}```", "cad").code == cad
    c = "#include <stdint.h>\n\nint main(void) {\n    return 0;\n}\n"
    assert extract_code(f"```cpp\n{c}```", "embedded").code == c
    assert extract_code(c, "embedded").code == c
    asm = ".text\n.globl f\nf:\n    mov %rdi, %rax\n    ret\n"
    assert extract_code(f"```asm\n{asm}```", "x86asm").code == asm
    assert extract_code(f"```s\n{asm}```", "x86asm").code == asm


def test_language_tags_and_entry_name():
    assert {"verilog", "sv", "systemverilog"} <= language_tags("rtl")
    assert {"c", "cpp", "cuda"} <= language_tags("embedded")
    task = Task("t", "rtl", "f", 1, "r", {"top": "adder8"}, {}, None, {})
    assert entry_name(task) == "adder8"


def test_crlf_and_reasoning_tags():
    text, cut = strip_reasoning("<thinking>x</thinking>\r\nok")
    assert (text, cut) == ("\nok", False)
    assert rtl(f"```verilog\r\n{ADDER.replace(chr(10), chr(13) + chr(10))}```").code == ADDER
