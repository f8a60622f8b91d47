"""x86-64 assembly optimization: a C function (or a whole program) and its gcc -O3
assembly in; faster, correct, ABI-clean x86-64 assembly (GNU as) out."""
