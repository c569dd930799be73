"""How the worker names a call's failure (calls.classify_exception): a GPU library's failed
allocation is an out-of-memory (which beside other jobs runs the job again alone), not the
candidate's CUDA error."""

import torch

from kbx_worker.calls import classify_exception


def test_a_gpu_librarys_failed_allocation_is_an_out_of_memory():
    # session 35 on an H100, an honest reference as its own candidate beside five other jobs
    exc = RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
    assert classify_exception(exc) == "oom"
    for word in ("CUDNN_STATUS_ALLOC_FAILED", "CUSOLVER_STATUS_ALLOC_FAILED",
                 "CUSPARSE_STATUS_ALLOC_FAILED", "CUFFT_ALLOC_FAILED"):
        assert classify_exception(RuntimeError(f"library said {word}")) == "oom", word


def test_other_failures_keep_their_kinds():
    assert classify_exception(torch.cuda.OutOfMemoryError("CUDA out of memory")) == "oom"
    assert classify_exception(RuntimeError("CUDA error: an illegal memory access")) == "cuda_error"
    assert classify_exception(RuntimeError("CUDA error: CUBLAS_STATUS_EXECUTION_FAILED")) \
        == "cuda_error"
    assert classify_exception(ValueError("shapes differ")) == "runtime_error"
