module shift_reg_univ8 (
    input  wire       clk,
    input  wire       rst_n,
    input  wire [1:0] mode,
    input  wire [7:0] d,
    input  wire       sl_in,
    input  wire       sr_in,
    output reg  [7:0] q
);
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n)
            q <= 8'd0;
        else begin
            case (mode)
                2'b01: q <= {q[6:0], sl_in};
                2'b10: q <= {sr_in, q[7:1]};
                2'b11: q <= d;
                default: q <= q;
            endcase
        end
    end
endmodule
