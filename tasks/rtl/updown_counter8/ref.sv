module updown_counter8 (
    input  wire       clk,
    input  wire       rst,
    input  wire       en,
    input  wire       load,
    input  wire       up,
    input  wire [7:0] d,
    output reg  [7:0] count
);
    always @(posedge clk) begin
        if (rst)
            count <= 8'd0;
        else if (load)
            count <= d;
        else if (en)
            count <= up ? count + 8'd1 : count - 8'd1;
    end
endmodule
