module mul8s (
    input  wire [7:0]  a,
    input  wire [7:0]  b,
    output wire [15:0] p
);
    assign p = $signed(a) * $signed(b);
endmodule
