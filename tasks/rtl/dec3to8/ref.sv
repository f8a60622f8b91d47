module dec3to8 (
    input  wire [2:0] a,
    input  wire       en,
    output wire [7:0] y
);
    assign y = en ? (8'd1 << a) : 8'd0;
endmodule
