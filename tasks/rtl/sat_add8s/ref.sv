module sat_add8s (
    input  wire [7:0] a,
    input  wire [7:0] b,
    output wire [7:0] y,
    output wire       sat
);
    wire [8:0] s = {a[7], a} + {b[7], b};
    wire pos_ovf = (s[8:7] == 2'b01);
    wire neg_ovf = (s[8:7] == 2'b10);

    assign y   = pos_ovf ? 8'h7F : neg_ovf ? 8'h80 : s[7:0];
    assign sat = pos_ovf | neg_ovf;
endmodule
