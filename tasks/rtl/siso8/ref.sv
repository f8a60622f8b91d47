module siso8 (
    input  wire clk,
    input  wire rst,
    input  wire en,
    input  wire din,
    output wire dout
);
    reg [7:0] stages;

    always @(posedge clk) begin
        if (rst)
            stages <= 8'd0;
        else if (en)
            stages <= {stages[6:0], din};
    end

    assign dout = stages[7];
endmodule
