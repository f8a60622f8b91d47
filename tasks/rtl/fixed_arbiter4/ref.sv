module fixed_arbiter4 (
    input  wire [3:0] req,
    output reg  [3:0] gnt,
    output wire       any_req
);
    always @(*) begin
        casez (req)
            4'b???1: gnt = 4'b0001;
            4'b??10: gnt = 4'b0010;
            4'b?100: gnt = 4'b0100;
            4'b1000: gnt = 4'b1000;
            default: gnt = 4'b0000;
        endcase
    end

    assign any_req = |req;
endmodule
