"""Calibrate mode: measure the machine's peaks that roofline fractions are taken against.

Request: {"mode": "calibrate", "device": "cuda" | "cpu"}. Events, one per measurement:
  {"ev": "gpu", "name", "device", "sm_count", "total_memory", "count", "environment": {...}}
  {"ev": "peak", "name": "copy_bw" | "fp32" | "tf32" | "bf16" | "fp16" | "int8",
   "value", "unit": "B/s" | "FLOP/s", "samples", "median_ms", "fast_ms", "size", "source"}
  (value: the rate at fast_ms, the fast end of the samples: see peak_ms)
  (source: on dense rates "torch" or "triton", whichever GEMM was faster; on copy_bw on cuda
  "copy", "add" or "sum", whichever access pattern moved the most bytes per second)
  {"ev": "skipped", "name", "reason"}
  {"ev": "clocks_end", "clocks": [{"sm", "mem"}] | None} on cuda, after the measurements
  {"ev": "error", "kind": "no_gpu", "message"} when cuda is asked for and torch sees none.

On cuda: memory bandwidth as the best of a copy, an add and a sum over 1 GiB (bytes counted:
read plus written; the event's source names the pattern) and 8192^3 matmuls
(torch's, and for bf16, fp16 and int8 also a plain Triton GEMM; the faster counts), timed with
CUDA events (CudaTimer: warm-up, then repetitions until the median is stable); each rate is taken
at the fast end of its samples (peak_ms).
On cpu: a 64 MiB copy and a 512^3 fp32 matmul timed with time.perf_counter, so that the whole
command can be exercised without a GPU; the other dtypes are reported as skipped.
"""

import os
import platform
import statistics
import subprocess
import time

import torch

from .timer import CudaTimer

GIB = 1 << 30
MIB = 1 << 20
CUDA_COPY_BYTES = GIB
CUDA_MATMUL_N = 8192
CPU_COPY_BYTES = 64 * MIB
CPU_MATMUL_N = 512
CPU_REPS = 10
# A peak is what the GPU can do, not what it does on average: under a long run of 8192^3 GEMMs
# the H200's clocks dip (session 19: the bf16 GEMM's median was 708 TFLOP/s, 30 samples where 10
# usually do, while the matmul expert ran at 755), and a peak set low makes an honest kernel look
# faster than the roofline allows (impossible_speed past kFloorMargin). So a rate is taken at
# the PEAK_QUANTILE of its samples' times, counted from the fastest.
PEAK_QUANTILE = 0.1
MATMUL_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
                 "fp16": torch.float16}


def _visible_gpus():
    """The GPUs CUDA_VISIBLE_DEVICES lets this process see, as nvidia-smi indices or UUIDs;
    None when every GPU is visible (unset) or the variable is in a form nvidia-smi cannot take."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    ids = [v.strip() for v in value.split(",") if v.strip()]
    if ids and all(v.isdigit() or v.startswith(("GPU-", "MIG-")) for v in ids):
        return ids
    return None


def _nvidia_smi(query):
    """Rows of `nvidia-smi --query-gpu=<query>` for the GPUs this process sees, as lists of
    strings, or None without nvidia-smi."""
    try:
        argv = ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"]
        visible = _visible_gpus()
        if visible:
            argv.append("--id=" + ",".join(visible))
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [[f.strip() for f in line.split(",")] for line in out.splitlines() if line.strip()]
    return rows or None


def _number(text):
    try:
        return int(text)
    except ValueError:
        return None


def machine_facts():
    """The driver and each GPU's current SM and memory clocks (MHz), from one nvidia-smi call,
    for the hello event of trusted modes (nvidia-smi is slow to start, so candidate workers skip
    it): {"driver": str | None, "clocks": [{"sm", "mem"}] | None}; {} without a GPU."""
    if not torch.cuda.is_available():
        return {}
    rows = [r for r in _nvidia_smi("driver_version,clocks.sm,clocks.mem") or [] if len(r) >= 3]
    if not rows:
        return {"driver": None, "clocks": None}
    return {"driver": rows[0][0],
            "clocks": [{"sm": _number(r[1]), "mem": _number(r[2])} for r in rows]}


def _environment():
    env = {"torch": torch.__version__, "cuda": torch.version.cuda,
           "python": platform.python_version()}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception:  # the calibration does not need triton; the record says it was missing
        env["triton"] = None
    env.update(machine_facts())
    return env


def host_facts():
    """The host's CPU model, the CPUs this process may run on and its pure-Python speed
    (timer.host_loop_ms: the fastest of three runs of a fixed loop, about 1 ms in all), for the
    hello event of trusted modes. Not part of the fingerprint. The speed is taken as the worker
    starts, amid the run's other starts, and is noisy: one H100 machine gave 0.399 and 0.228 ms in
    two runs back to back (session 46), where the quiet measurements before host-bound timings
    put two machines' hosts at 0.21 and 0.45 ms; a fact to read beside those, not a test."""
    from .timer import host_loop_ms
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count()
    return {"cpu": _cpu_name(), "cpus": cpus, "host_loop_ms": round(host_loop_ms(), 4)}


def _cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def peak_ms(samples_ms):
    """The time a peak rate is taken at: the PEAK_QUANTILE of the samples, from the fastest (the
    fastest of up to ten)."""
    ordered = sorted(samples_ms)
    return ordered[int(PEAK_QUANTILE * (len(ordered) - 1))]


def _send_peak(channel, name, amount, unit, samples_ms, size):
    fast_ms = peak_ms(samples_ms)
    channel.send("peak", name=name, value=amount / (fast_ms * 1e-3), unit=unit,
                 samples=len(samples_ms), median_ms=statistics.median(samples_ms),
                 fast_ms=fast_ms, size=size)


# --- cuda ----------------------------------------------------------------------------------------

def _cuda_copy(channel, timer, device):
    """The memory bandwidth peak: the best of three access patterns over 1 GiB, since a kernel
    that reads more than it writes can beat a plain copy (bytes counted: read plus written):
    a copy (1 read, 1 write), an elementwise add (2 reads, 1 write) and a sum (reads only)."""
    n = CUDA_COPY_BYTES // 4
    a = torch.ones(n, dtype=torch.float32, device=device)
    b = torch.ones_like(a)
    out = torch.empty_like(a)
    total = torch.empty((), dtype=torch.float32, device=device)
    patterns = [("copy", 2 * CUDA_COPY_BYTES, lambda: out.copy_(a)),
                ("add", 3 * CUDA_COPY_BYTES, lambda: torch.add(a, b, out=out)),
                ("sum", CUDA_COPY_BYTES, lambda: torch.sum(a, dim=0, out=total))]
    best = None
    for source, nbytes, fn in patterns:
        samples = timer.run(fn)
        rate = nbytes / (peak_ms(samples) * 1e-3)
        if best is None or rate > best[0]:
            best = (rate, source, samples)
    rate, source, samples = best
    channel.send("peak", name="copy_bw", value=rate, unit="B/s", samples=len(samples),
                 median_ms=statistics.median(samples), fast_ms=peak_ms(samples),
                 size=CUDA_COPY_BYTES, source=source)
    del a, b, out, total
    torch.cuda.empty_cache()


def _cuda_matmul(channel, timer, device, name):
    n = CUDA_MATMUL_N
    torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
    a = torch.randn(n, n, device=device).to(MATMUL_DTYPES[name])
    b = torch.randn(n, n, device=device).to(MATMUL_DTYPES[name])
    samples = timer.run(lambda: torch.matmul(a, b))
    triton_best = None
    if name in ("bf16", "fp16"):
        triton_best = _triton_rate(timer, a, b, torch.empty_like(a), name)
    _send_best(channel, name, n, samples, triton_best)
    del a, b
    torch.cuda.empty_cache()


def _triton_gemm():
    """A plain Triton GEMM (C = A @ B, square, row-major, sizes multiples of the blocks): the
    second opinion on a dense rate, since the library's kernel for a dtype is not always its best
    (torch._int_mm on Hopper is far below the tensor cores' int8 rate). None without Triton."""
    try:
        from . import gemm_kernel
    except ImportError:
        return None
    return gemm_kernel.gemm


# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) tried for the Triton GEMM; the best one counts.
TRITON_CONFIGS = {"half": [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4)],
                  "int8": [(128, 256, 128, 8, 3), (128, 128, 128, 4, 4)]}


def _triton_rate(timer, a, b, out, name):
    """The best FLOP/s of the Triton GEMM over its configs: (its peak_ms, its samples), or
    None."""
    gemm = _triton_gemm()
    if gemm is None:
        return None
    n = a.shape[0]
    best = None
    for config in TRITON_CONFIGS["int8" if name == "int8" else "half"]:
        try:
            gemm(a, b, out, config)
            torch.cuda.synchronize(a.device)
            samples = timer.run(lambda: gemm(a, b, out, config))
        except Exception:  # a config this GPU cannot run (shared memory): try the next
            continue
        fast_ms = peak_ms(samples)
        if best is None or fast_ms < best[0]:
            best = (fast_ms, samples)
    return best


def _send_best(channel, name, n, library_samples, triton_best):
    """The better of the library's and the Triton GEMM's rates, saying which it was."""
    flops = 2.0 * n ** 3
    samples, source = library_samples, "torch"
    if triton_best and (not samples or triton_best[0] < peak_ms(samples)):
        samples, source = triton_best[1], "triton"
    fast_ms = peak_ms(samples)
    channel.send("peak", name=name, value=flops / (fast_ms * 1e-3), unit="FLOP/s",
                 samples=len(samples), median_ms=statistics.median(samples), fast_ms=fast_ms,
                 size=n, source=source)


def _cuda_int8(channel, timer, device):
    int_mm = getattr(torch, "_int_mm", None)
    n = CUDA_MATMUL_N
    a = torch.randint(-128, 128, (n, n), dtype=torch.int8, device=device)
    b = torch.randint(-128, 128, (n, n), dtype=torch.int8, device=device)
    samples = []
    try:
        if int_mm is not None:
            int_mm(a, b)
            torch.cuda.synchronize(device)
            samples = timer.run(lambda: int_mm(a, b))
    except RuntimeError:
        pass  # the Triton GEMM may still measure it
    b_k_major = b.t().contiguous().t()  # the same matrix, stored column by column
    triton_best = _triton_rate(timer, a, b_k_major,
                               torch.empty((n, n), dtype=torch.int32, device=device), "int8")
    if not samples and not triton_best:
        channel.send("skipped", name="int8", reason="neither torch._int_mm nor Triton ran")
        return
    _send_best(channel, "int8", n, samples, triton_best)
    del a, b
    torch.cuda.empty_cache()


def _run_cuda(channel):
    if not torch.cuda.is_available():
        channel.send("error", kind="no_gpu", message="torch sees no CUDA GPU")
        return
    device = torch.device("cuda", 0)
    props = torch.cuda.get_device_properties(device)
    channel.send("gpu", name=props.name, device="cuda", sm_count=props.multi_processor_count,
                 total_memory=props.total_memory, count=torch.cuda.device_count(),
                 environment=_environment())
    timer = CudaTimer(device, warmup_ms=100.0, budget_ms=1000.0)
    saved_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        _measured(channel, "copy_bw", lambda: _cuda_copy(channel, timer, device))
        for name in MATMUL_DTYPES:
            _measured(channel, name, lambda: _cuda_matmul(channel, timer, device, name))
        _measured(channel, "int8", lambda: _cuda_int8(channel, timer, device))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved_tf32
    channel.send("clocks_end", clocks=machine_facts().get("clocks"))  # as the GPU is under load


def _measured(channel, name, measure):
    """Runs one measurement; one that fails (out of memory, a dtype the GPU lacks) becomes a
    skipped event with the reason, and the others still run."""
    try:
        measure()
    except RuntimeError as exc:  # torch.cuda.OutOfMemoryError is one
        torch.cuda.empty_cache()
        channel.send("skipped", name=name,
                     reason=f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")


# --- cpu -----------------------------------------------------------------------------------------

def _cpu_time(fn):
    """Per-call milliseconds of fn after two warm-up calls."""
    for _ in range(2):
        fn()
    samples = []
    for _ in range(CPU_REPS):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def _run_cpu(channel):
    channel.send("gpu", name=_cpu_name(), device="cpu", sm_count=None, total_memory=None,
                 count=0, environment=_environment(), cpu_count=os.cpu_count())
    src = torch.ones(CPU_COPY_BYTES, dtype=torch.uint8)
    dst = torch.empty_like(src)
    _send_peak(channel, "copy_bw", 2 * CPU_COPY_BYTES, "B/s",
               _cpu_time(lambda: dst.copy_(src)), CPU_COPY_BYTES)
    n = CPU_MATMUL_N
    a, b = torch.randn(n, n), torch.randn(n, n)
    _send_peak(channel, "fp32", 2.0 * n ** 3, "FLOP/s", _cpu_time(lambda: torch.matmul(a, b)), n)
    for name in ("tf32", "bf16", "fp16", "int8"):
        channel.send("skipped", name=name, reason="device cpu: only copy_bw and fp32 are measured")


def run(request, channel):
    device = request.get("device", "cuda")
    if device == "cuda":
        _run_cuda(channel)
    elif device == "cpu":
        _run_cpu(channel)
    else:
        raise ValueError(f"calibrate request: device must be 'cuda' or 'cpu', not {device!r}")
