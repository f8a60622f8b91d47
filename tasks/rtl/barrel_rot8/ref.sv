module barrel_rot8 (
    input  wire [7:0] data,
    input  wire [2:0] amt,
    input  wire       dir,
    output wire [7:0] y
);
    wire [3:0] back = 4'd8 - {1'b0, amt};

    // a shift by 8 clears the word, so amt = 0 needs no special case
    assign y = dir ? ((data >> amt) | (data << back)) : ((data << amt) | (data >> back));
endmodule
