module down_timer (
    input  wire       clk,
    input  wire       rst,
    input  wire       start,
    input  wire [4:0] load_val,
    output reg  [4:0] count,
    output wire       busy,
    output reg        done
);
    always @(posedge clk) begin
        if (rst) begin
            count <= 5'd0;
            done  <= 1'b0;
        end else if (start) begin
            count <= load_val;
            done  <= 1'b0;
        end else if (count != 5'd0) begin
            count <= count - 5'd1;
            done  <= (count == 5'd1);
        end else begin
            done <= 1'b0;
        end
    end

    assign busy = (count != 5'd0);
endmodule
