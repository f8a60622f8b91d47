module edge_detector (
    input  wire clk,
    input  wire rst_n,
    input  wire sig,
    output wire rise,
    output wire fall
);
    reg prev;

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n)
            prev <= 1'b0;
        else
            prev <= sig;
    end

    assign rise = sig & ~prev;
    assign fall = ~sig & prev;
endmodule
