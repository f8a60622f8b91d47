module alu4op (
    input  wire [7:0] a,
    input  wire [7:0] b,
    input  wire [1:0] op,
    output reg  [7:0] y,
    output reg        c
);
    always @(*) begin
        c = 1'b0;
        case (op)
            2'b00: {c, y} = {1'b0, a} + {1'b0, b};
            2'b01: begin
                y = a - b;
                c = (a < b);
            end
            2'b10: y = a & b;
            default: y = a ^ b;
        endcase
    end
endmodule

module reg9 (
    input  wire       clk,
    input  wire       rst,
    input  wire       en,
    input  wire [8:0] d,
    output reg  [8:0] q
);
    always @(posedge clk) begin
        if (rst)
            q <= 9'd0;
        else if (en)
            q <= d;
    end
endmodule

module acc_datapath (
    input  wire       clk,
    input  wire       rst,
    input  wire       en,
    input  wire [1:0] op,
    input  wire [7:0] operand,
    output wire [7:0] acc,
    output wire       cy,
    output wire       zero
);
    wire [7:0] y;
    wire       c;

    alu4op u_alu (
        .a(acc),
        .b(operand),
        .op(op),
        .y(y),
        .c(c)
    );

    reg9 u_reg (
        .clk(clk),
        .rst(rst),
        .en(en),
        .d({c, y}),
        .q({cy, acc})
    );

    assign zero = (acc == 8'd0);
endmodule
