module demux1to4 (
    input  wire [7:0] d,
    input  wire [1:0] sel,
    output wire [7:0] y0,
    output wire [7:0] y1,
    output wire [7:0] y2,
    output wire [7:0] y3
);
    assign y0 = (sel == 2'd0) ? d : 8'd0;
    assign y1 = (sel == 2'd1) ? d : 8'd0;
    assign y2 = (sel == 2'd2) ? d : 8'd0;
    assign y3 = (sel == 2'd3) ? d : 8'd0;
endmodule
