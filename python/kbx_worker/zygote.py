"""The warm parent: import torch, triton and the worker once, then fork one child per job.

    python -I -c '<bootstrap>' --socket-fd 3   (a trusted process: isolated interpreter)

The supervisor sends, over a SOCK_SEQPACKET socket, one message per job: JSON (id, env, cwd,
isolate_network, max_file_bytes, probe, confine) with its descriptors attached (request, events,
stdout, stderr, then the probe's pipe and the init-pid pipe when present). The parent forks; the
child takes the sandbox's steps (own process group, rlimits, descriptors 0-4 only, 5 for the
probe's pipe; then the confinement of confine.py: own uid and namespaces, a minimal filesystem)
and runs the worker in place, with the scrubbed environment.
The parent answers {"ev": "started", "id", "pid"} and, when a child ends, {"ev": "exit", "pid",
"status"} with the raw wait status. CUDA is never touched here, only in the children.
"""

import argparse
import ctypes
import json
import os
import resource
import select
import signal
import socket
import sys

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000


def _enter_network_namespace():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) == 0:
        return True
    return libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0


def _child(job, fds, sock):
    try:
        os.setpgid(0, 0)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        plan = job.get("confine")
        if not plan and job.get("isolate_network") and not _enter_network_namespace():
            os._exit(121)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        limit = int(job.get("max_file_bytes", 0))
        if limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        sock.close()  # first: it sits on descriptor 3, which the request pipe takes below
        devnull = os.open(os.devnull, os.O_RDONLY)
        high = [os.dup(fd) for fd in fds]  # out of the way of the targets below
        targets = [3, 4, 1, 2]
        if job.get("probe"):  # the probe's pipe, when the supervisor gave one
            targets.append(5)
        if plan:  # where the confinement reports its namespace's init pid
            targets.append(plan["init_pid_fd"])
        os.dup2(devnull, 0)
        for fd, target in zip(high, targets):
            os.dup2(fd, target)
        low = 3  # every descriptor but the targets is closed
        for keep in sorted(set(targets) | {0, 1, 2}):
            if keep >= low:
                os.closerange(low, keep)
                low = keep + 1
        os.closerange(low, 4096)
        if plan:  # from here on this process is PID 1 of its own namespaces, as the sandbox uid
            from . import confine
            confine.enter(plan)
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        _forget_parent_paths()
        sys.argv = ["kbx_worker"]
        from .__main__ import main
        code = main(["--request-fd", "3", "--event-fd", "4"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # the worker's own failure: report it as a plain exit, like a process
        import traceback
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code or 0)


def _forget_parent_paths():
    """Paths that modules imported in the parent worked out from its own folder and environment
    (a folder of kbx's that no job may see) are worked out again from the job's: tempfile's
    temporary folder (cached by its first use; Inductor's cache goes under it) and Dynamo's debug
    folder (under the folder it was imported in)."""
    import tempfile
    tempfile.tempdir = None
    config = sys.modules.get("torch._dynamo.config")
    default = getattr(config, "default_debug_dir_root", None)
    if callable(default):
        try:
            config.debug_dir_root = default()
        except Exception:  # a torch whose config refuses it: its debug output is off by default
            pass


def libcuda_path():
    """The file of CUDA's driver library loaded in this process, or None (CUDA cannot have
    started without it)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:  # address perms offset dev inode [path]
                fields = line.split(None, 5)
                if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith(
                        "libcuda.so"):
                    return fields[5].strip()
    except OSError:
        pass
    return None


CUDA_ERROR_NOT_INITIALIZED = 3


def cuda_driver_started():
    """Whether cuInit has run in this process (a child forked after it cannot use CUDA), asked
    of the driver without starting it: cuDeviceGetCount answers CUDA_ERROR_NOT_INITIALIZED until
    cuInit has run. torch's own flag misses a cuInit of torch.cuda.is_available() or of Triton's
    driver check (session 31 on the H100: torch 2.11's compiler imports started the driver with
    the flag unset)."""
    path = libcuda_path()
    if path is None:
        return False
    try:
        lib = ctypes.CDLL(path)  # the one loaded already
        count = ctypes.c_int(0)
        return lib.cuDeviceGetCount(ctypes.byref(count)) != CUDA_ERROR_NOT_INITIALIZED
    except (OSError, AttributeError):
        return True  # mapped but not callable: assume the worst


def without_flag(argv, flag):
    """argv without the given flag (an argument without a value)."""
    return [a for a in argv if a != flag]


def _send(sock, **msg):
    sock.send(json.dumps(msg).encode())


def main(argv=None):
    p = argparse.ArgumentParser(prog="kbx_worker.zygote")
    p.add_argument("--socket-fd", type=int, required=True)
    p.add_argument("--preload-lazy-torch", action="store_true",
                   help="import what torch loads on first use (a GPU run: __main__.py says why)")
    p.add_argument("--preload-compiler", action="store_true",
                   help="import torch.compile's Dynamo and Inductor once for all jobs")
    opts = p.parse_args(argv)
    sock = socket.socket(fileno=opts.socket_fd)
    import numpy  # noqa: F401  (warm: the imports every worker needs)
    import torch
    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except Exception:
        pass
    from . import candidate_mode, confine, judge_mode, reference_mode  # noqa: F401
    if opts.preload_lazy_torch:
        from .__main__ import preload_lazy_torch_modules
        preload_lazy_torch_modules()
    if opts.preload_compiler:
        from .__main__ import preload_compiler_modules
        preload_compiler_modules()
    if torch.cuda.is_initialized() or cuda_driver_started():  # a child could not use CUDA
        if not opts.preload_compiler:  # kbx starts its jobs cold
            raise SystemExit("kbx_worker.zygote: an import initialised CUDA in the warm parent")
        # CUDA's driver started with torch.compile's modules (a torch whose imports query the
        # GPU): this parent starts again, as a new program, without them
        print("kbx_worker.zygote: importing torch.compile's modules started CUDA's driver; "
              "the warm parent starts again without them", file=sys.stderr, flush=True)
        os.set_inheritable(opts.socket_fd, True)
        os.execv(sys.executable, without_flag(sys.orig_argv, "--preload-compiler"))
    _send(sock, ev="ready")  # kbx's wait for each fork starts now, not during the imports
    children = set()
    while True:
        ready, _, _ = select.select([sock], [], [], 0.05)
        for pid in list(children):
            try:
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                    continue
                try:  # what is left of its group, while its zombie keeps the group's id
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:  # not a child any more: reported as killed
                status = signal.SIGKILL
            children.discard(pid)
            _send(sock, ev="exit", pid=pid, status=status)
        if not ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 6)
        except OSError:
            break
        if not data:
            break
        job = json.loads(data)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(job, fds, sock)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass  # the child already did it, or has already ended
        for fd in fds:
            os.close(fd)
        children.add(pid)
        _send(sock, ev="started", id=job["id"], pid=pid)
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


if __name__ == "__main__":
    main()
