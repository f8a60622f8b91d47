module baud_tick (
    input  wire clk,
    input  wire rst,
    input  wire run,
    output wire tick
);
    reg [1:0] cnt;

    always @(posedge clk) begin
        if (rst || !run)
            cnt <= 2'd0;
        else
            cnt <= cnt + 2'd1;
    end

    assign tick = run && (cnt == 2'd3);
endmodule

module frame_shifter (
    input  wire       clk,
    input  wire       rst,
    input  wire       load,
    input  wire       shift,
    input  wire [7:0] data,
    output wire       txd,
    output wire       active
);
    reg [9:0] sr;
    reg [3:0] left;

    always @(posedge clk) begin
        if (rst) begin
            sr   <= 10'h3FF;
            left <= 4'd0;
        end else if (load) begin
            sr   <= {1'b1, data, 1'b0};
            left <= 4'd10;
        end else if (shift) begin
            sr   <= {1'b1, sr[9:1]};
            left <= left - 4'd1;
        end
    end

    assign txd    = sr[0];
    assign active = (left != 4'd0);
endmodule

module uart_tx8 (
    input  wire       clk,
    input  wire       rst,
    input  wire       start,
    input  wire [7:0] data,
    output wire       tx,
    output wire       busy
);
    wire tick, txd;

    baud_tick u_baud (
        .clk(clk),
        .rst(rst),
        .run(busy),
        .tick(tick)
    );

    frame_shifter u_frame (
        .clk(clk),
        .rst(rst),
        .load(start && !busy),
        .shift(tick),
        .data(data),
        .txd(txd),
        .active(busy)
    );

    assign tx = busy ? txd : 1'b1;
endmodule
