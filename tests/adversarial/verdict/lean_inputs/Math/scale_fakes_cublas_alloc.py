# Attack on the out-of-memory retry: the call raises the words of cuBLAS's failed allocation,
# which kbx reads as an out-of-memory (beside other jobs, no verdict: the job runs again alone).
# It must not escape a verdict that way: alone, the same error is its oom, and that stands.


def scale(x, factor):
    raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
