module onehot_to_bin8 (
    input  wire [7:0] onehot,
    output wire [2:0] bin,
    output wire       err
);
    reg [2:0] idx;
    reg [3:0] ones;
    integer i;

    always @(*) begin
        idx  = 3'd0;
        ones = 4'd0;
        for (i = 0; i < 8; i = i + 1) begin
            if (onehot[i]) idx = i[2:0];
            ones = ones + {3'd0, onehot[i]};
        end
    end

    assign err = (ones != 4'd1);
    assign bin = err ? 3'd0 : idx;
endmodule
