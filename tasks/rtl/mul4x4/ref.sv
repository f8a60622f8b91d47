module mul4x4 (
    input  wire [3:0] a,
    input  wire [3:0] b,
    output wire [7:0] p
);
    assign p = {4'd0, a} * {4'd0, b};
endmodule
