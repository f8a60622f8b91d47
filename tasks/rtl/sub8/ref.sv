module sub8 (
    input  wire [7:0] a,
    input  wire [7:0] b,
    output wire [7:0] diff,
    output wire       borrow,
    output wire       ovf
);
    assign diff   = a - b;
    assign borrow = (a < b);
    assign ovf    = (a[7] ^ b[7]) & (diff[7] ^ a[7]);
endmodule
