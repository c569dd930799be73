#!/usr/bin/env python3
"""Does an eager convolution run slower when the GPU's free memory is short?

Session 40 on an H100, the 184 references as their own candidates with KBX_TIMER_KEEP_OUTPUTS=3
(three more outputs alive in every timed batch): `Fusion/fused_leaky_relu_conv2d` perf_f32_resnet_56
took 4.48 ms in the candidate's worker against 2.97 ms as the eager baseline (2.98 both in the
run before, without the kept outputs), and `Fusion/fused_silu_layer_norm_conv2d`'s same case
5.98 ms eager against 4.53 ms. A guess: PyTorch's cuDNN convolution tries its execution plans in
order and takes the next one when the workspace of one cannot be allocated, so with little free
memory (other jobs' allocations, kept outputs) it runs a plan that needs less workspace and is
slower. Timed on a GPU that other workers fill, an eager baseline (or a candidate calling
torch's convolution) could then be slow by chance, and a speedup off by up to 1.5x.

This script times the same convolutions with the GPU's free memory cut to each --free level by
a filler tensor in this process (the workspace comes from the same caching allocator, which has
nothing cached to give), each level twice in turn (down, then up again), and prints the median
ms per level. If the guess holds, the time steps up below some level.

    python3 bench/conv_workspace_gpu.py [--free all,4096,1024,256,64,16] [--reps 20]
"""
import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from placement_gpu import MIB, time_median  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def parse_levels(text):
    """--free's levels in MiB, in the given order; 'all' is None (no filler)."""
    levels = []
    for item in text.split(","):
        item = item.strip()
        if item == "all":
            levels.append(None)
        elif item.isdigit() and int(item) > 0:
            levels.append(int(item))
        else:
            raise ValueError(f"--free: {item!r} is neither 'all' nor a whole number of MiB above 0")
    return levels


def filler_bytes(free_bytes, level_mib, headroom_bytes=0):
    """The filler's size that leaves level_mib free of free_bytes, less what the call's own
    output needs (headroom_bytes); 0 when there is not that much free to begin with."""
    if level_mib is None:
        return 0
    return max(0, free_bytes - level_mib * MIB - headroom_bytes)


def workloads():
    """(name, make inputs, call): Fusion/fused_leaky_relu_conv2d's perf_f32_resnet_56 (the
    convolution of both tasks that moved), and its bf16 form."""
    def make(dtype):
        def build():
            x = torch.randn(32, 256, 56, 56, device="cuda", dtype=dtype)
            w = torch.randn(256, 256, 3, 3, device="cuda", dtype=dtype) * 0.02
            b = torch.randn(256, device="cuda", dtype=dtype)
            return x, w, b
        return build

    def call(t):
        return F.leaky_relu(F.conv2d(t[0], t[1], t[2], 1, 1), 0.01)
    return [("conv_f32_resnet_56", make(torch.float32), call),
            ("conv_bf16_resnet_56", make(torch.bfloat16), call)]


def time_at_level(call, tensors, level_mib, reps, out_bytes):
    """Median ms of call(tensors) with level_mib left free (None: no filler); None when the call
    itself ran out of memory."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    free, _ = torch.cuda.mem_get_info()
    size = filler_bytes(free, level_mib, out_bytes)
    filler = torch.empty(size, dtype=torch.uint8, device="cuda") if size else None
    try:
        return time_median(lambda: call(tensors), reps)
    except torch.cuda.OutOfMemoryError:
        return None
    finally:
        del filler
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--free", default="all,4096,1024,256,64,16",
                    help="free memory to leave, MiB ('all': no filler), in order")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    levels = parse_levels(args.free)
    print(torch.cuda.get_device_name(), torch.__version__, "cuDNN", torch.backends.cudnn.version(),
          "benchmark", torch.backends.cudnn.benchmark, "allow_tf32",
          torch.backends.cudnn.allow_tf32, flush=True)
    for name, build, call in workloads():
        tensors = build()
        out = call(tensors)
        out_bytes = 2 * out.untyped_storage().nbytes()  # the output and leaky_relu's
        del out
        rows = []
        for level in levels + levels[::-1]:  # down, then up again
            ms = time_at_level(call, tensors, level, args.reps, out_bytes)
            rows.append((level, ms))
            shown = "out of memory" if ms is None else f"{ms:.4f} ms"
            # (session 41) the caching allocator's count of failed allocations, caught or not: the
            # signal kbx's workers read (timer.gpu_ooms) to tell a starved process
            ooms = torch.cuda.memory_stats().get("num_ooms", 0)
            print(f"{name} free {'all' if level is None else f'{level} MiB'}: {shown} "
                  f"(num_ooms {ooms})", flush=True)
        timed = [ms for _, ms in rows if ms is not None]
        if timed:
            print(f"{name}: slowest level {max(timed) / min(timed):.3f}x the fastest", flush=True)
        del tensors
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
