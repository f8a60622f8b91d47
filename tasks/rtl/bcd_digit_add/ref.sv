module bcd_digit_add (
    input  wire [3:0] a,
    input  wire [3:0] b,
    input  wire       cin,
    output wire [3:0] sum,
    output wire       cout
);
    wire [4:0] t = {1'b0, a} + {1'b0, b} + {4'd0, cin};
    wire [3:0] fixed = t[3:0] + 4'd6;

    assign cout = (t > 5'd9);
    assign sum  = cout ? fixed : t[3:0];
endmodule
