"""Dedup benchmark (WIP: generator)."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PARTS = (
    "data ctrl addr buf cnt state next valid ready req ack fifo rd wr ptr sel mux acc sum tmp "
    "bit lane beat pkt hdr crc tag way idx err flag mode cfg stat irq dma bus mem cache tx rx "
    "div phase tap coef sample pix row col lut key val hit miss fill drain head tail base "
    "limit step gain bias scale shift mask pad len off seq ord win slot port chan link frame "
    "burst word byte nib half quad carry borrow over under sat wrap lock sync edge pulse tick "
    "timer wdog pwm adc dac uart spi i2c gpio core hart warp tile blk grid thr fetch decode "
    "exec mem wb alu fpu mul quot rem exp mant sign norm round zero one two lo hi mid cur prev "
    "old new in out src dst ref cmp eq gt lt ge le inc dec en clr set rst load store push pop"
).split()
BIN_OPS = ("+", "-", "&", "|", "^", "<<", ">>", "==", "!=", "<", ">=", "*")


class Gen:
    """Random Verilog modules and C functions: every identifier and constant is drawn at
    random, so two generated documents share only the languages' keywords and idioms."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def ident(self) -> str:
        r = self.rng
        name = "_".join(r.sample(PARTS, r.choice((2, 2, 3))))
        return name + (str(r.randrange(100)) if r.random() < 0.3 else "")

    def const(self) -> str:
        r = self.rng
        return str(r.randrange(1 << r.choice((2, 4, 8, 12, 16))))

    def expr(self, names: list[str], depth: int = 0) -> str:
        r = self.rng
        if depth >= 2 or r.random() < 0.3:
            return r.choice(names) if r.random() < 0.7 else self.const()
        left, right = self.expr(names, depth + 1), self.expr(names, depth + 1)
        if r.random() < 0.1:
            return f"({r.choice(names)} ? {left} : {right})"
        return f"({left} {r.choice(BIN_OPS)} {right})"

    def comment(self) -> str:
        return " ".join(self.rng.sample(PARTS, self.rng.randint(3, 8)))

    def verilog(self, lines: int) -> str:
        r = self.rng
        ins = [self.ident() for _ in range(r.randint(2, 6))]
        outs = [self.ident() for _ in range(r.randint(1, 4))]
        regs = [self.ident() for _ in range(r.randint(2, 6))]
        names = ins + regs
        ports = ["    input wire clk", "    input wire rst_n"]
        ports += [f"    input wire [{r.randint(1, 31)}:0] {n}" for n in ins]
        ports += [f"    output reg [{r.randint(1, 31)}:0] {n}" for n in outs]
        out = [f"// {self.comment()}", f"module {self.ident()} #(parameter W = {r.randint(2, 64)}) ("]
        out.append(",\n".join(ports))
        out.append(");")
        out += [f"    reg [{r.randint(1, 31)}:0] {n};" for n in regs]
        while len("\n".join(out).splitlines()) < lines - 2:
            kind = r.random()
            if kind < 0.35:
                targets = r.sample(regs + outs, r.randint(2, min(5, len(regs + outs))))
                out.append("    always @(posedge clk or negedge rst_n) begin")
                out.append("        if (!rst_n) begin")
                out += [f"            {t} <= {self.const()};" for t in targets]
                out.append(f"        end else if ({self.expr(names)}) begin")
                out += [f"            {t} <= {self.expr(names)};" for t in targets]
                out.append("        end")
                out.append("    end")
            elif kind < 0.6:
                sel = r.choice(names)
                target = r.choice(outs + regs)
                out.append("    always @(*) begin")
                out.append(f"        case ({sel})")
                for i in r.sample(range(64), r.randint(2, 6)):
                    out.append(f"            6'd{i}: {target} = {self.expr(names)};")
                out.append(f"            default: {target} = {self.const()};")
                out.append("        endcase")
                out.append("    end")
            elif kind < 0.85:
                w = self.ident()
                out.append(f"    wire [{r.randint(1, 31)}:0] {w} = {self.expr(names)};")
                names.append(w)
            else:
                out.append(f"    // {self.comment()}")
        out.append("endmodule")
        return "\n".join(out) + "\n"

    def c_function(self, lines: int) -> str:
        r = self.rng
        args = [self.ident() for _ in range(r.randint(1, 4))]
        names = [*args]
        out = [f"/* {self.comment()} */"]
        out.append(
            f"static int {self.ident()}(" + ", ".join(f"int {a}" for a in args) + ") {"
        )
        while len("\n".join(out).splitlines()) < lines - 2:
            kind = r.random()
            if kind < 0.3:
                v = self.ident()
                out.append(f"    int {v} = {self.expr(names)};")
                names.append(v)
            elif kind < 0.55:
                i = self.ident()
                out.append(f"    for (int {i} = 0; {i} < {self.const()}; ++{i}) {{")
                out.append(f"        {r.choice(names)} += {self.expr([*names, i])};")
                out.append("    }")
            elif kind < 0.85:
                out.append(f"    if ({self.expr(names)}) {{")
                out.append(f"        {r.choice(names)} = {self.expr(names)};")
                out.append("    } else {")
                out.append(f"        {r.choice(names)} ^= {self.expr(names)};")
                out.append("    }")
            else:
                out.append(f"    // {self.comment()}")
        out.append(f"    return {self.expr(names)};")
        out.append("}")
        return "\n".join(out) + "\n"

    def document(self) -> str:
        lines = self.rng.randint(50, 150)
        return self.verilog(lines) if self.rng.random() < 0.5 else self.c_function(lines)

    def near_copy(self, doc: str) -> str:
        """A few token edits plus comment and whitespace changes."""
        r = self.rng
        words = list(re.finditer(r"\b[A-Za-z_]\w*\b|\b\d+\b", doc))
        picks = sorted(r.sample(range(len(words)), r.randint(1, 4)))
        out, last = [], 0
        for i in picks:
            m = words[i]
            out.append(doc[last : m.start()])
            edit = r.random()
            if edit < 0.4:
                out.append(self.ident())
            elif edit < 0.7:
                out.append(self.const())
            elif edit < 0.85:
                out.append("")  # token deleted
            else:
                out.append(f"{m.group()} + 1")
            last = m.end()
        out.append(doc[last:])
        lines = "".join(out).splitlines()
        if r.random() < 0.5:
            lines.insert(r.randrange(len(lines)), f"    // {self.comment()}")
        if r.random() < 0.5:
            lines = [line.replace("    ", "\t") for line in lines]
        if r.random() < 0.3:
            lines = [line.rstrip() + "  " for line in lines]
        return "\n".join(lines) + "\n"


def corpus(n: int, seed: int = 0, dup_fraction: float = 0.1) -> tuple[list[str], list[tuple[int, int]]]:
    """n documents, `dup_fraction` of them edited copies of an earlier original; the
    planted (copy, original) pairs."""
    rng = random.Random(seed)
    gen = Gen(rng)
    docs: list[str] = []
    originals: list[int] = []
    planted: list[tuple[int, int]] = []
    for i in range(n):
        if originals and rng.random() < dup_fraction:
            src = rng.choice(originals)
            docs.append(gen.near_copy(docs[src]))
            planted.append((i, src))
        else:
            docs.append(gen.document())
            originals.append(i)
    return docs, planted
