module gray_codec8 (
    input  wire [7:0] bin_in,
    input  wire [7:0] gray_in,
    output wire [7:0] gray_out,
    output wire [7:0] bin_out
);
    assign gray_out = bin_in ^ (bin_in >> 1);

    // bin_out[i] is the XOR of gray_in[7:i]
    genvar i;
    generate
        for (i = 0; i < 8; i = i + 1) begin : g_bin
            assign bin_out[i] = ^(gray_in >> i);
        end
    endgenerate
endmodule
