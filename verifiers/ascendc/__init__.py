"""NPU kernels in AscendC (Huawei Ascend): pyasc's Python DSL lowered here to AscendC C++,
or AscendC C++ in NPUKernelBench's layout; compiled, checked for precision and timed only
where CANN runs (`verifiers.ascendc.cann`)."""
