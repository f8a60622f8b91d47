module cmp8_mode (
    input  wire [7:0] a,
    input  wire [7:0] b,
    input  wire       is_signed,
    output wire       eq,
    output wire       lt,
    output wire       gt
);
    wire lt_u = a < b;
    wire lt_s = $signed(a) < $signed(b);

    assign eq = (a == b);
    assign lt = is_signed ? lt_s : lt_u;
    assign gt = ~eq & ~lt;
endmodule
