"""Offline candidates for RTL tasks: the reference, rewrites of it, and realistic bugs.

Every operator edits the reference text at token spans found by `verilog.analyze`, so the
rest of the file (comments, layout) stays as the author wrote it. Rewrites are applied only
where the construct they touch is one whose behaviour they provably keep; mutations imitate
bugs that models writing Verilog actually make, one defect per candidate.
"""

from __future__ import annotations

from generators.perturb.operators import Mutation, OperatorGenerator, Rewrite, check_table
from generators.perturb.rtl_mutations import (
    blocking_to_nonblocking,
    concat_order,
    drop_reset,
    incomplete_sensitivity,
    invert_condition,
    latch_inference,
    malformed_literal,
    missing_end,
    missing_port,
    missing_semicolon,
    nonblocking_to_blocking,
    off_by_one,
    rename_port,
    resize_range,
    stuck_output,
    swap_operands,
    swap_ternary,
    undeclared_identifier,
    wrong_edge,
    wrong_fsm_transition,
    wrong_operator,
)
from generators.perturb.rtl_rewrites import (
    commute,
    reformat,
    rename_internal,
    sv_always,
    ternary_to_always,
)
from verifiers.taxonomy import FUNCTIONAL, SYNTAX

REWRITES: tuple[Rewrite, ...] = (
    Rewrite("rename_internal", "internal nets and variables renamed consistently per "
            "module; ports, parameters and other modules' names untouched", rename_internal),
    Rewrite("reformat", "comments removed and lines re-indented; tokens unchanged", reformat),
    Rewrite("sv_always", "always @* -> always_comb and always @(edge) -> always_ff where "
            "the block is a plain single-driver process", sv_always),
    Rewrite("commute", "operands of commutative operators swapped (a + b -> b + a)",
            commute),
    Rewrite("ternary_to_always", "assign y = c ? a : b -> always @* if/else, y made a reg",
            ternary_to_always),
)  # fmt: skip

MUTATIONS: tuple[Mutation, ...] = (
    Mutation("nonblocking_to_blocking", "blocking `=` in a clocked block: registers read "
             "later in the block see this cycle's value (pipelines collapse)", FUNCTIONAL,
             nonblocking_to_blocking),
    Mutation("blocking_to_nonblocking", "non-blocking `<=` in combinational logic: "
             "intermediate values lag by a delta, lint-dirty", FUNCTIONAL,
             blocking_to_nonblocking),
    Mutation("off_by_one", "a constant one too large or small (terminal count, compare "
             "bound, loop limit)", FUNCTIONAL, off_by_one),
    Mutation("port_width", "a port declared one bit narrower or wider than the interface",
             SYNTAX, resize_range(ports=True)),
    Mutation("signal_width", "an internal register or wire one bit too narrow or wide",
             FUNCTIONAL, resize_range(ports=False)),
    Mutation("drop_reset", "reset branch forgotten: registers never initialise",
             FUNCTIONAL, drop_reset),
    Mutation("invert_condition", "an if condition with the opposite sense (== for !=, "
             "active-low reset read as active-high)", FUNCTIONAL, invert_condition),
    Mutation("swap_ternary", "the arms of a ?: swapped: mux select polarity reversed",
             FUNCTIONAL, swap_ternary),
    Mutation("rename_port", "a port named by convention (din, clk_i, o_y) instead of the "
             "interface's name", SYNTAX, rename_port),
    Mutation("missing_port", "a port of the interface left out of the module header",
             SYNTAX, missing_port),
    Mutation("malformed_literal", "a digit its base does not allow (4'b1012, 8'hFG)",
             SYNTAX, malformed_literal),
    Mutation("missing_end", "an `end` of a begin/end pair dropped", SYNTAX, missing_end),
    Mutation("missing_semicolon", "a statement or declaration without its `;`", SYNTAX,
             missing_semicolon),
    Mutation("undeclared_identifier", "a near-miss spelling of a signal (nextstate, "
             "count_reg) that is declared nowhere", SYNTAX, undeclared_identifier),
    Mutation("wrong_fsm_transition", "a state machine moving to the wrong next state",
             FUNCTIONAL, wrong_fsm_transition),
    Mutation("latch_inference", "combinational block missing a default / else "
             "assignment, so a latch holds the old value", FUNCTIONAL, latch_inference),
    Mutation("wrong_operator", "a similar operator (+/-, &/|, ==/!=, </<=, <</>>)",
             FUNCTIONAL, wrong_operator),
    Mutation("swap_operands", "operands of a non-commutative operator reversed (b - a, "
             "b < a)", FUNCTIONAL, swap_operands),
    Mutation("concat_order", "concatenation fields in the wrong order ({lo, hi})",
             FUNCTIONAL, concat_order),
    Mutation("wrong_edge", "the opposite clock or reset edge (negedge clk)", FUNCTIONAL,
             wrong_edge),
    Mutation("stuck_output", "an output left tied to 0, as in an unfinished stub",
             FUNCTIONAL, stuck_output),
    Mutation("incomplete_sensitivity", "a hand-written sensitivity list missing a signal: "
             "simulation holds stale values synthesis would not", FUNCTIONAL,
             incomplete_sensitivity),
)  # fmt: skip

check_table(REWRITES)
check_table(MUTATIONS)


class RtlPerturbGenerator(OperatorGenerator):
    name = "perturb:rtl"
    domain = "rtl"
    rewrites = REWRITES
    mutations = MUTATIONS
