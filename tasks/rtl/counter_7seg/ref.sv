module decade_counter (
    input  wire       clk,
    input  wire       rst,
    input  wire       en,
    output reg  [3:0] q,
    output wire       carry
);
    always @(posedge clk) begin
        if (rst)
            q <= 4'd0;
        else if (en)
            q <= (q == 4'd9) ? 4'd0 : q + 4'd1;
    end

    assign carry = en && (q == 4'd9);
endmodule

module seg7_decoder (
    input  wire [3:0] digit,
    output reg  [6:0] seg
);
    always @(*) begin
        case (digit)
            4'd0: seg = 7'h3F;
            4'd1: seg = 7'h06;
            4'd2: seg = 7'h5B;
            4'd3: seg = 7'h4F;
            4'd4: seg = 7'h66;
            4'd5: seg = 7'h6D;
            4'd6: seg = 7'h7D;
            4'd7: seg = 7'h07;
            4'd8: seg = 7'h7F;
            4'd9: seg = 7'h6F;
            default: seg = 7'h00;
        endcase
    end
endmodule

module counter_7seg (
    input  wire       clk,
    input  wire       rst,
    input  wire       en,
    output wire [3:0] digit,
    output wire [6:0] seg,
    output wire       carry
);
    decade_counter u_count (
        .clk(clk),
        .rst(rst),
        .en(en),
        .q(digit),
        .carry(carry)
    );

    seg7_decoder u_seg (
        .digit(digit),
        .seg(seg)
    );
endmodule
