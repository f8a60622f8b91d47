module seq_det_101_moore (
    input  wire clk,
    input  wire rst,
    input  wire din,
    output wire z
);
    localparam [1:0] IDLE = 2'd0, GOT1 = 2'd1, GOT10 = 2'd2, FOUND = 2'd3;

    reg [1:0] state, next;

    always @(*) begin
        case (state)
            IDLE:    next = din ? GOT1  : IDLE;
            GOT1:    next = din ? GOT1  : GOT10;
            GOT10:   next = din ? FOUND : IDLE;
            default: next = din ? GOT1  : GOT10;
        endcase
    end

    always @(posedge clk) begin
        if (rst)
            state <= IDLE;
        else
            state <= next;
    end

    assign z = (state == FOUND);
endmodule
