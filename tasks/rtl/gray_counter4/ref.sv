module gray_counter4 (
    input  wire       clk,
    input  wire       areset,
    input  wire       en,
    output wire [3:0] gray
);
    reg [3:0] n;

    always @(posedge clk or posedge areset) begin
        if (areset)
            n <= 4'd0;
        else if (en)
            n <= n + 4'd1;
    end

    assign gray = n ^ (n >> 1);
endmodule
