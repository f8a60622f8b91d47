module regfile8x8 (
    input  wire       clk,
    input  wire       rst,
    input  wire       we,
    input  wire [2:0] waddr,
    input  wire [7:0] wdata,
    input  wire [2:0] raddr1,
    input  wire [2:0] raddr2,
    output wire [7:0] rdata1,
    output wire [7:0] rdata2
);
    reg [7:0] regs [1:7];
    integer i;

    always @(posedge clk) begin
        if (rst) begin
            for (i = 1; i < 8; i = i + 1)
                regs[i] <= 8'd0;
        end else if (we && waddr != 3'd0) begin
            regs[waddr] <= wdata;
        end
    end

    assign rdata1 = (raddr1 == 3'd0) ? 8'd0 : regs[raddr1];
    assign rdata2 = (raddr2 == 3'd0) ? 8'd0 : regs[raddr2];
endmodule
