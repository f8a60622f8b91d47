module abs_diff8 (
    input  wire [7:0] a,
    input  wire [7:0] b,
    output wire [7:0] d,
    output wire       a_lt_b
);
    assign a_lt_b = (a < b);
    assign d = a_lt_b ? (b - a) : (a - b);
endmodule
