"""The chip-design (Verilog / SystemVerilog) domain: node resource `eda`."""
