module alu8 (
    input  wire [7:0] a,
    input  wire [7:0] b,
    input  wire [2:0] op,
    output reg  [7:0] y,
    output reg        carry,
    output wire       zero
);
    always @(*) begin
        carry = 1'b0;
        case (op)
            3'b000: {carry, y} = {1'b0, a} + {1'b0, b};
            3'b001: begin
                y     = a - b;
                carry = (a < b);
            end
            3'b010: y = a & b;
            3'b011: y = a | b;
            3'b100: y = a ^ b;
            3'b101: y = a << b[2:0];
            3'b110: y = a >> b[2:0];
            default: y = {7'd0, $signed(a) < $signed(b)};
        endcase
    end

    assign zero = (y == 8'd0);
endmodule
