module param_counter #(
    parameter WIDTH = 5
) (
    input  wire             clk,
    input  wire             rst_n,
    input  wire             clr,
    input  wire             en,
    output reg  [WIDTH-1:0] count,
    output wire             at_max
);
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n)
            count <= {WIDTH{1'b0}};
        else if (clr)
            count <= {WIDTH{1'b0}};
        else if (en)
            count <= count + 1'b1;
    end

    assign at_max = &count;
endmodule
