module mod10_counter (
    input  wire       clk,
    input  wire       rst,
    input  wire       en,
    output reg  [3:0] count,
    output wire       tc
);
    always @(posedge clk) begin
        if (rst)
            count <= 4'd0;
        else if (en)
            count <= (count == 4'd9) ? 4'd0 : count + 4'd1;
    end

    assign tc = en && (count == 4'd9);
endmodule
