module vending_machine (
    input  wire       clk,
    input  wire       rst,
    input  wire [1:0] coin,
    output wire       vend,
    output wire       change,
    output wire [1:0] credit
);
    reg  [1:0] state;
    wire [1:0] units = (coin == 2'b01) ? 2'd1 : (coin == 2'b10) ? 2'd2 : 2'd0;
    wire [2:0] sum   = {1'b0, state} + {1'b0, units};

    assign vend   = (sum >= 3'd3);
    assign change = (sum == 3'd4);
    assign credit = state;

    always @(posedge clk) begin
        if (rst)
            state <= 2'd0;
        else
            state <= vend ? 2'd0 : sum[1:0];
    end
endmodule
