module bcd_counter2 (
    input  wire       clk,
    input  wire       rst,
    input  wire       en,
    output reg  [3:0] tens,
    output reg  [3:0] ones,
    output wire       wrap
);
    always @(posedge clk) begin
        if (rst) begin
            tens <= 4'd0;
            ones <= 4'd0;
        end else if (en) begin
            if (ones == 4'd9) begin
                ones <= 4'd0;
                tens <= (tens == 4'd9) ? 4'd0 : tens + 4'd1;
            end else begin
                ones <= ones + 4'd1;
            end
        end
    end

    assign wrap = en && (tens == 4'd9) && (ones == 4'd9);
endmodule
