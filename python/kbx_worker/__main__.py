"""Entry point: python -m kbx_worker --request-fd N --event-fd M."""

import argparse
import os
import platform
import sys


def _hello(channel, request):
    import torch
    info = {"python": platform.python_version(), "torch": torch.__version__,
            "cuda_available": torch.cuda.is_available(), "pid": os.getpid()}
    try:
        import triton
        info["triton"] = triton.__version__
    except Exception as exc:  # reported, not fatal: the track rules decide what it means
        info["triton"] = None
        info["triton_error"] = str(exc)[:200]
    # trusted modes, for the run's record; a reference worker only where kbx reads it
    # ("machine_facts": the first of a run's reference workers)
    facts = request.get("mode") in ("reference", "calibrate", "hello") \
        and request.get("machine_facts", True)
    if facts and request.get("mode") != "hello":  # hello's: only its fingerprint is kept
        from .calibrate_mode import host_facts
        info.update(host_facts())
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda
        info["gpu_count"] = torch.cuda.device_count()
        info["gpu_memory"] = torch.cuda.get_device_properties(0).total_memory
        if facts:  # nvidia-smi's driver and clocks
            from .calibrate_mode import machine_facts
            info.update(machine_facts())
    channel.send("hello", **info)


def preload_lazy_torch_modules():
    """Imports what torch loads on first use of some everyday calls: torch.broadcast_shapes (and
    much else) imports torch's symbolic shapes and sympy, 1.7 s of CPU the first time. Done at the
    worker's start, that time is not spent inside a task's hold of the GPU's timing slot (on the
    H200 it was: 2.4 s on the first full-size case of a reference worker's task). A test:
    tests/python/test_preload.py."""
    try:
        import torch.fx.experimental.symbolic_shapes  # noqa: F401
    except Exception:  # an older torch without it: nothing to preload
        pass


NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"


def preload_compiler_modules():
    """Imports torch.compile's front and back end (Dynamo, Inductor and what they pull in: about
    960 modules, 2 s of CPU on the CPU machine, more on a loaded host). The warm parent does it
    once, on a GPU run, so that a candidate or reference that calls torch.compile does not import
    them again in every job; a job that never compiles pays nothing (its pages are the parent's).
    Importing them reads the process's paths (tempfile's folder, Dynamo's debug folder under the
    current folder): a forked job takes its own again (zygote._forget_parent_paths).
    A test: tests/python/test_preload.py."""
    # Their imports ask whether CUDA is there (torch.cuda.is_available, Triton's driver check):
    # torch's default answer starts CUDA's driver (cuInit), after which no forked job can use
    # CUDA (session 31 on the H100, torch 2.11); NVML's answer starts nothing. Only for these
    # imports: the jobs get the environment they were given.
    before = os.environ.get(NVML_CHECK)
    os.environ[NVML_CHECK] = "1"
    try:
        import torch._dynamo  # noqa: F401
        import torch._inductor.compile_fx  # noqa: F401
    except Exception:  # a torch without them, or one that cannot compile: nothing to preload
        pass
    finally:
        if before is None:
            os.environ.pop(NVML_CHECK, None)
        else:
            os.environ[NVML_CHECK] = before


def start_intra_op_pool():
    """Makes torch's CPU thread pool (OpenMP's, which MKL's LAPACK shares) now, at the worker's
    start. A thread gets the CPUs of the thread that makes it: a pool made at the first parallel
    call inside the timing slot, where kbx pins the holder's main thread to the slot's one CPU,
    would put every pool thread on that CPU (bench/pinned_pool.py: a 400x400 eig's warm-up ran
    past 90 s on the H200's 16 CPUs that way). kbx spreads such threads again before the timed
    batches, but their warm-up ran pinned. A test: tests/python/test_preload.py."""
    import torch
    if torch.get_num_threads() > 1:
        torch.ones(1 << 20, dtype=torch.float32).sum()  # above the grain size: a parallel region


def _keep_probe_to_this_process():
    """The probe (loaded by CUDA into any process that starts CUDA with this environment) writes
    only from this process: a subprocess that starts CUDA (torch.compile's workers, say) stays
    inert instead of writing a second stream into the supervisor's pipe, which it does not
    inherit either."""
    fd = os.environ.get("KBX_PROBE_FD")
    if not fd:
        return
    os.environ["KBX_PROBE_PID"] = str(os.getpid())
    try:
        os.set_inheritable(int(fd), False)
    except (OSError, ValueError):
        pass  # not open: the probe reports it when CUDA starts


def name_process(mode):
    """Names this process kbx-<mode> (Linux's comm: ps, top, /proc/PID/comm), so that a sampler
    of the GPU's processes (bench/gpu_mem_by_role.py) can tell a reference worker from a
    candidate or a judge: warm parents fork them all from one command line. For diagnostics only:
    a candidate can rename itself. Returns whether it took."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_name = 15
        return libc.prctl(pr_set_name, f"kbx-{mode}".encode()[:15], 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def main(argv=None):
    parser = argparse.ArgumentParser(prog="kbx_worker")
    parser.add_argument("--request-fd", type=int, required=True)
    parser.add_argument("--event-fd", type=int, required=True)
    opts = parser.parse_args(argv)
    _keep_probe_to_this_process()
    from .proto import Channel
    channel = Channel(opts.request_fd, opts.event_fd)
    request = channel.read_request()
    name_process(str(request.get("mode", "worker")))
    _hello(channel, request)
    if request["mode"] in ("reference", "candidate") and "cuda" in str(request.get("device")):
        preload_lazy_torch_modules()  # on a GPU only: the CPU has no timing slot
        start_intra_op_pool()
    if request["mode"] == "reference":
        from . import reference_mode
        reference_mode.run(request, channel)
    elif request["mode"] == "candidate":
        from . import candidate_mode
        candidate_mode.run(request, channel)
    elif request["mode"] == "judge":
        from . import judge_mode
        judge_mode.run(request, channel)
    elif request["mode"] == "hello":
        pass  # the hello event is the answer: the environment, for its fingerprint
    elif request["mode"] == "calibrate":
        from . import calibrate_mode
        calibrate_mode.run(request, channel)
    else:
        raise SystemExit(f"unknown mode {request['mode']!r}")
    if request["mode"] == "candidate":
        _settle_gpu()
    # Output first: a candidate on the GPU is killed as soon as kbx reads "done" (its timing
    # slot goes to the next job then, not after its teardown).
    sys.stdout.flush()
    sys.stderr.flush()
    channel.send("done")
    return 0


def _settle_gpu():
    """The GPU work of this process finished and its probe records written, before "done"."""
    import torch
    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return
    from .timer import _ORIGINALS, ProbeMarks
    try:
        _ORIGINALS["torch.cuda.synchronize"]()
    except RuntimeError as e:  # a sticky CUDA error of the candidate's: its cases say so
        print(f"kbx_worker: synchronizing before done: {e}", file=sys.stderr)
    ProbeMarks().flush()


if __name__ == "__main__":
    sys.exit(main())
