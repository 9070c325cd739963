"""The smoke session: a MatMul+Add+Relu model on the CUDA EP, in a child process CPU fallback cannot fool."""
