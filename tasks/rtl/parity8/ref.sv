module parity8 (
    input  wire [7:0] data,
    output wire       even_bit,
    output wire       odd_bit
);
    assign even_bit = ^data;
    assign odd_bit  = ~^data;
endmodule
