module param_delay #(
    parameter WIDTH = 4,
    parameter DEPTH = 3
) (
    input  wire             clk,
    input  wire             rst,
    input  wire [WIDTH-1:0] d,
    output wire [WIDTH-1:0] q
);
    reg [WIDTH-1:0] stages [0:DEPTH-1];
    integer i;

    always @(posedge clk) begin
        if (rst) begin
            for (i = 0; i < DEPTH; i = i + 1)
                stages[i] <= {WIDTH{1'b0}};
        end else begin
            stages[0] <= d;
            for (i = 1; i < DEPTH; i = i + 1)
                stages[i] <= stages[i-1];
        end
    end

    assign q = stages[DEPTH-1];
endmodule
