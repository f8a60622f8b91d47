module piso8 (
    input  wire       clk,
    input  wire       rst_n,
    input  wire       load,
    input  wire       shift,
    input  wire [7:0] d,
    output wire       sout,
    output wire       busy
);
    reg [7:0] sr;
    reg [3:0] left;

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            sr   <= 8'd0;
            left <= 4'd0;
        end else if (load) begin
            sr   <= d;
            left <= 4'd8;
        end else if (shift && left != 4'd0) begin
            sr   <= {sr[6:0], 1'b0};
            left <= left - 4'd1;
        end
    end

    assign sout = sr[7];
    assign busy = (left != 4'd0);
endmodule
