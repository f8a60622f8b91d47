module lifo_stack8 (
    input  wire       clk,
    input  wire       rst,
    input  wire       push,
    input  wire       pop,
    input  wire [7:0] din,
    output reg  [7:0] dout,
    output wire       full,
    output wire       empty,
    output reg  [3:0] depth
);
    reg [7:0] mem [0:7];

    wire do_pop  = pop && !empty;
    wire do_push = push && !full && !do_pop;
    wire [3:0] below = depth - 4'd1;

    always @(posedge clk) begin
        if (rst) begin
            depth <= 4'd0;
            dout  <= 8'd0;
        end else if (do_pop) begin
            dout  <= mem[below[2:0]];
            depth <= below;
        end else if (do_push) begin
            mem[depth[2:0]] <= din;
            depth <= depth + 4'd1;
        end
    end

    assign full  = (depth == 4'd8);
    assign empty = (depth == 4'd0);
endmodule
