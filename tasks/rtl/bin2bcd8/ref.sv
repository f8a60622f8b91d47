module bin2bcd8 (
    input  wire [7:0] bin,
    output reg  [3:0] hundreds,
    output reg  [3:0] tens,
    output reg  [3:0] ones
);
    // double dabble: shift the binary value in, adding 3 to any digit >= 5 first
    // (the hundreds digit never exceeds 2, so it needs no correction)
    integer i;
    reg [19:0] acc;

    always @(*) begin
        acc = {12'd0, bin};
        for (i = 0; i < 8; i = i + 1) begin
            if (acc[11:8] >= 4'd5)   acc[11:8]  = acc[11:8] + 4'd3;
            if (acc[15:12] >= 4'd5)  acc[15:12] = acc[15:12] + 4'd3;
            acc = acc << 1;
        end
        hundreds = acc[19:16];
        tens     = acc[15:12];
        ones     = acc[11:8];
    end
endmodule
