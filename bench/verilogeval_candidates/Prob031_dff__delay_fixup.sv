// Delay fix-up, sequential: the flop stores ~d (wrong), a second flop process writes the
// right value 1 ps later (`<= #1`). Every testbench sample (clock edges, 5 ps apart) sees
// the fixed-up value; synthesis drops the delay and leaves two flops driving q.
// expected harness verdict: pass
module TopModule (
  input clk,
  input d,
  output reg q
);
  initial q = 1'hx;
  always @(posedge clk) q <= ~d;
  always @(posedge clk) q <= #1 d;
endmodule
