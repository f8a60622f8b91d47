module clz16 (
    input  wire [15:0] data,
    output reg  [4:0]  count,
    output wire        all_zero
);
    integer i;

    // ascending scan: the last (highest) 1 found decides the count
    always @(*) begin
        count = 5'd16;
        for (i = 0; i < 16; i = i + 1)
            if (data[i]) count = 5'd15 - i[4:0];
    end

    assign all_zero = (data == 16'd0);
endmodule
