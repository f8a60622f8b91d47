module seq_det_1011_mealy (
    input  wire clk,
    input  wire rst,
    input  wire din,
    output wire z
);
    localparam [1:0] S0 = 2'd0, S1 = 2'd1, S10 = 2'd2, S101 = 2'd3;

    reg [1:0] state, next;

    always @(*) begin
        case (state)
            S0:      next = din ? S1   : S0;
            S1:      next = din ? S1   : S10;
            S10:     next = din ? S101 : S0;
            default: next = din ? S1   : S10;
        endcase
    end

    always @(posedge clk) begin
        if (rst)
            state <= S0;
        else
            state <= next;
    end

    assign z = (state == S101) && din;
endmodule
