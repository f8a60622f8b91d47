module serial_parity (
    input  wire clk,
    input  wire rst,
    input  wire valid,
    input  wire din,
    output wire odd
);
    reg p;

    assign odd = p ^ (valid & din);

    always @(posedge clk) begin
        if (rst)
            p <= 1'b0;
        else
            p <= odd;
    end
endmodule
