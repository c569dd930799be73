"""Which import of torch.compile's modules starts CUDA's driver (session 31: the compiler preload
broke every candidate on torch 2.11). Prints, after each step, whether cuInit has run (the
driver's cuDeviceGetCount says CUDA_ERROR_NOT_INITIALIZED, 3, until it has), and the stack of
the first call of torch's device count and of Triton's driver check."""
import ctypes
import os
import sys
import traceback


def driver_state():
    try:
        with open("/proc/self/maps") as maps:
            if not any("libcuda.so" in line for line in maps):
                return "libcuda not mapped"
        lib = ctypes.CDLL("libcuda.so.1")
        n = ctypes.c_int(0)
        rc = lib.cuDeviceGetCount(ctypes.byref(n))
        return f"cuDeviceGetCount rc={rc} ({'started' if rc != 3 else 'not started'})"
    except OSError as e:
        return f"no libcuda: {e}"


def step(name, fn):
    fn()
    print(f"{name:40s} {driver_state()}", flush=True)


print("PYTORCH_NVML_BASED_CUDA_CHECK =", os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK"))
step("start", lambda: None)
import torch  # noqa: E402

step("import torch", lambda: None)
seen = set()


def traced(name, real):
    def wrapper(*a, **k):
        if name not in seen:
            seen.add(name)
            print(f"--- first call of {name}:", file=sys.stdout)
            traceback.print_stack(limit=14, file=sys.stdout)
        return real(*a, **k)
    return wrapper


torch._C._cuda_getDeviceCount = traced("torch._C._cuda_getDeviceCount",
                                       torch._C._cuda_getDeviceCount)
step("import triton", lambda: __import__("triton.language"))
try:
    import triton.backends.nvidia.driver as nd
    for attr in ("_cuda_driver_is_active",):
        if hasattr(nd, attr):
            setattr(nd, attr, traced(f"triton {attr}", getattr(nd, attr)))
    nd.CudaDriver.is_active = staticmethod(traced("triton CudaDriver.is_active",
                                                  nd.CudaDriver.is_active))
except Exception as e:
    print("no triton nvidia driver:", e)
step("import torch._dynamo", lambda: __import__("torch._dynamo"))
step("import torch._inductor.compile_fx", lambda: __import__("torch._inductor.compile_fx"))
print("torch.cuda.is_initialized():", torch.cuda.is_initialized())
