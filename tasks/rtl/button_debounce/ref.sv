module button_debounce (
    input  wire clk,
    input  wire rst,
    input  wire btn,
    output reg  db
);
    reg [1:0] cnt;

    always @(posedge clk) begin
        if (rst) begin
            db  <= 1'b0;
            cnt <= 2'd0;
        end else if (btn == db) begin
            cnt <= 2'd0;
        end else if (cnt == 2'd3) begin
            db  <= btn;
            cnt <= 2'd0;
        end else begin
            cnt <= cnt + 2'd1;
        end
    end
endmodule
