module traffic_light (
    input  wire       clk,
    input  wire       rst_n,
    input  wire       car_ew,
    output reg  [1:0] ns,
    output reg  [1:0] ew
);
    localparam [1:0] NS_GREEN = 2'd0, NS_YELLOW = 2'd1, EW_GREEN = 2'd2, EW_YELLOW = 2'd3;
    localparam [1:0] RED = 2'b00, YELLOW = 2'b01, GREEN = 2'b10;

    reg [1:0] state, next;
    reg [2:0] t;

    always @(*) begin
        next = state;
        case (state)
            NS_GREEN:  if (t >= 3'd4 && car_ew) next = NS_YELLOW;
            NS_YELLOW: if (t == 3'd1) next = EW_GREEN;
            EW_GREEN:  if (t == 3'd4) next = EW_YELLOW;
            default:   if (t == 3'd1) next = NS_GREEN;
        endcase
    end

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            state <= NS_GREEN;
            t     <= 3'd0;
        end else begin
            state <= next;
            if (next != state)
                t <= 3'd0;
            else if (t != 3'd7)
                t <= t + 3'd1;
        end
    end

    always @(*) begin
        case (state)
            NS_GREEN:  begin ns = GREEN;  ew = RED;    end
            NS_YELLOW: begin ns = YELLOW; ew = RED;    end
            EW_GREEN:  begin ns = RED;    ew = GREEN;  end
            default:   begin ns = RED;    ew = YELLOW; end
        endcase
    end
endmodule
