module full_adder (
    input  wire a,
    input  wire b,
    input  wire cin,
    output wire s,
    output wire cout
);
    wire p = a ^ b;

    assign s    = p ^ cin;
    assign cout = (a & b) | (cin & p);
endmodule

module ripple_adder8 (
    input  wire [7:0] a,
    input  wire [7:0] b,
    input  wire       cin,
    output wire [7:0] sum,
    output wire       cout
);
    wire [8:0] c;

    assign c[0] = cin;

    genvar i;
    generate
        for (i = 0; i < 8; i = i + 1) begin : g_stage
            full_adder fa (
                .a(a[i]),
                .b(b[i]),
                .cin(c[i]),
                .s(sum[i]),
                .cout(c[i+1])
            );
        end
    endgenerate

    assign cout = c[8];
endmodule
