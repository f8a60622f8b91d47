module majority5 (
    input  wire [4:0] votes,
    output wire       maj
);
    wire [2:0] ones = {2'b00, votes[0]} + {2'b00, votes[1]} + {2'b00, votes[2]}
                    + {2'b00, votes[3]} + {2'b00, votes[4]};

    assign maj = (ones >= 3'd3);
endmodule
