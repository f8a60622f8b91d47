module param_reg_en #(
    parameter             WIDTH       = 12,
    parameter [WIDTH-1:0] RESET_VALUE = 12'hA5C
) (
    input  wire             clk,
    input  wire             areset,
    input  wire             en,
    input  wire [WIDTH-1:0] d,
    output reg  [WIDTH-1:0] q
);
    always @(posedge clk or posedge areset) begin
        if (areset)
            q <= RESET_VALUE;
        else if (en)
            q <= d;
    end
endmodule
