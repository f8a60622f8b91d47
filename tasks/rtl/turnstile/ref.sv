module turnstile (
    input  wire clk,
    input  wire rst,
    input  wire coin,
    input  wire push,
    input  wire clear,
    output wire unlocked,
    output wire alarm
);
    localparam [1:0] LOCKED = 2'd0, UNLOCKED = 2'd1, ALARM = 2'd2;

    reg [1:0] state;

    always @(posedge clk) begin
        if (rst)
            state <= LOCKED;
        else begin
            case (state)
                LOCKED:   state <= coin ? UNLOCKED : (push ? ALARM : LOCKED);
                UNLOCKED: state <= push ? LOCKED : UNLOCKED;
                default:  state <= clear ? LOCKED : ALARM;
            endcase
        end
    end

    assign unlocked = (state == UNLOCKED);
    assign alarm    = (state == ALARM);
endmodule
