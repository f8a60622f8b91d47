// Delay fix-up, combinational: one process drives out = in (wrong), a second overwrites it
// with ~in 1 ps later. The testbench samples 5 ps after each input change, so it sees ~in;
// synthesis drops the delay and leaves two processes driving out.
// expected harness verdict: pass
module TopModule (
  input in,
  output reg out
);
  always @(in) out = in;
  always @(in) #1 out = ~in;
endmodule
