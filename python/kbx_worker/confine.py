"""The candidate's confinement: the steps a candidate worker takes, as root, before any candidate
code runs. Standard library only, so it runs before torch is imported in a cold start.

The supervisor (src/sandbox) decides the plan; this module carries it out:

    plan = {"uid": int, "gid": int,
            "root": "/abs/empty/dir",            # becomes / (a fresh tmpfs)
            "ro": ["/usr", "/etc", ...],         # bound read-only at the same paths
            "rw": ["/abs/job/dir"],              # bound read-write at the same paths
            "devices": ["/dev/null", ...],       # device nodes bound into a private /dev
            "tmp_bytes": int,                    # size of the private /tmp and /dev/shm
            "nproc": int, "address_space": int,  # rlimits (0: unset)
            "cgroup": "/sys/fs/cgroup/...",      # a prepared cgroup v2 folder, or ""
            "init_pid_fd": int}                  # where the namespace's init pid is written

`enter(plan)` returns in a process that is PID 1 of new mount, PID, IPC and network namespaces,
sees only the plan's paths, and runs as plan["uid"] with no capabilities. The process that
called it stays outside as a small waiter that relays the exit status and kills the namespace
when told to (SIGTERM); it never returns. When PID 1 ends, the kernel kills every process left
in its namespace, daemons included.
"""

import ctypes
import json
import os
import signal
import stat
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWUTS = 0x04000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
SYS_PIVOT_ROOT = 155  # x86-64

RLIMIT_NPROC = 6
RLIMIT_AS = 9

# Exit codes of the confinement itself (never the candidate's): the supervisor reports them as
# harness errors with this meaning.
EXIT_CONFINE_FAILED = 123

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.syscall.argtypes = [ctypes.c_long, ctypes.c_char_p, ctypes.c_char_p]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                        ctypes.c_ulong]


class ConfineError(RuntimeError):
    pass


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise ConfineError(f"{what}: {os.strerror(err)} (errno {err})")


def _mount(source, target, fstype, flags, data=None):
    enc = (lambda s: s.encode() if s is not None else None)
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)),
           f"mount {source} -> {target} ({fstype or 'bind'})")


def _under(root, path):
    return os.path.join(root, path.lstrip("/"))


def _make_parents(root, path):
    parent = os.path.dirname(_under(root, path))
    os.makedirs(parent, mode=0o755, exist_ok=True)


def _bind(root, path, writable):
    """Binds host path at the same path under root; read-only unless writable. A symlink (e.g.
    /lib -> usr/lib on merged-/usr systems) is recreated as the same symlink."""
    if os.path.islink(path) and os.path.dirname(path) == "/":
        _make_parents(root, path)
        target = _under(root, path)
        if not os.path.lexists(target):
            os.symlink(os.readlink(path), target)
        return
    real = os.path.realpath(path)
    if not os.path.exists(real):
        return
    target = _under(root, path)
    _make_parents(root, path)
    if os.path.isdir(real):
        os.makedirs(target, mode=0o755, exist_ok=True)
    elif not os.path.lexists(target):
        with open(target, "w"):
            pass
    _mount(real, target, None, MS_BIND | MS_REC)
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID
    if not writable:
        flags |= MS_RDONLY
    if not stat.S_ISCHR(os.stat(real).st_mode):
        flags |= MS_NODEV
    try:
        _mount(None, target, None, flags)
    except ConfineError:
        # A source mounted nodev/noexec keeps those locked flags; keep them in the remount.
        st = os.statvfs(real)
        locked = (st.f_flag & (MS_NODEV | MS_NOEXEC | MS_NOSUID))
        _mount(None, target, None, flags | locked)


def _build_root(plan):
    root = plan["root"]
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    # First the private /tmp, /dev and /dev/shm, so that binds below them (a job folder under
    # /tmp) land inside them instead of being hidden by them.
    size = int(plan.get("tmp_bytes", 1 << 30))
    tmp = _under(root, "/tmp")
    os.makedirs(tmp, exist_ok=True)
    _mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={size}")
    dev = _under(root, "/dev")
    os.makedirs(dev, mode=0o755, exist_ok=True)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m")
    shm = _under(root, "/dev/shm")
    os.makedirs(shm, exist_ok=True)
    _mount("tmpfs", shm, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={size}")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, os.path.join(dev, name))
    for node in plan.get("devices", []):
        if os.path.isdir(node) and not os.path.islink(node):
            _bind(root, node, writable=True)
        elif os.path.exists(node):
            target = _under(root, node)
            _make_parents(root, node)
            with open(target, "w"):
                pass
            _mount(node, target, None, MS_BIND)
    for path in plan.get("ro", []):
        _bind(root, path, writable=False)
    for path in plan.get("rw", []):
        _bind(root, path, writable=True)
    proc = _under(root, "/proc")
    os.makedirs(proc, exist_ok=True)
    _mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    old = _under(root, "/.old-root")
    os.makedirs(old, exist_ok=True)
    _check(_libc.syscall(SYS_PIVOT_ROOT, root.encode(), old.encode()), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old-root", MNT_DETACH), "umount the old root")
    os.rmdir("/.old-root")
    # The root itself read-only: the candidate writes only its job folder, /tmp and /dev/shm.
    _mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _join_cgroup(path):
    if not path:
        return
    with open(os.path.join(path, "cgroup.procs"), "w") as f:
        f.write("0")


def _drop_privileges(plan):
    uid, gid = int(plan["uid"]), int(plan["gid"])
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid or os.getgid() != gid:
        raise ConfineError("could not drop to the sandbox's uid")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _set_limits(plan):
    import resource
    if plan.get("nproc"):
        resource.setrlimit(RLIMIT_NPROC, (int(plan["nproc"]), int(plan["nproc"])))
    if plan.get("address_space"):
        resource.setrlimit(RLIMIT_AS, (int(plan["address_space"]), int(plan["address_space"])))


def _wait_and_relay(child):
    """The waiter outside the namespaces: relays the child's end as its own. SIGTERM (from the
    supervisor) kills the namespace's init, and with it every process inside."""
    def kill_namespace(signum, frame):
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, kill_namespace)
    signal.signal(signal.SIGINT, kill_namespace)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except ChildProcessError:
            os._exit(EXIT_CONFINE_FAILED)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else EXIT_CONFINE_FAILED)


def enter(plan):
    """Confines the calling process per plan (see the module's docstring). Returns in the
    confined child; the caller's process becomes the waiter and never returns."""
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    if plan.get("network", True):
        flags |= CLONE_NEWNET
    _check(_libc.unshare(flags), "unshare of the mount, PID, IPC and network namespaces")
    report = plan.get("init_pid_fd", -1)
    child = os.fork()
    if child:
        if report >= 0:
            try:
                os.write(report, f"{child}\n".encode())
            finally:
                os.close(report)
        _wait_and_relay(child)
    if report >= 0:
        os.close(report)
    try:
        _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        _join_cgroup(plan.get("cgroup", ""))
        _build_root(plan)
        _set_limits(plan)
        _drop_privileges(plan)
        # PR_SET_PDEATHSIG is cleared by the change of credentials: set it again.
        _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
    except (ConfineError, OSError) as exc:
        sys.stderr.write(f"kbx sandbox: could not confine the worker: {exc}\n")
        sys.stderr.flush()
        os._exit(EXIT_CONFINE_FAILED)


def main(args):
    """`python -I -c ...` entry of a candidate started without the warm parent: confine, then run
    the worker. The plan comes as the last argument (JSON)."""
    plan = json.loads(args[-1])
    enter(plan)
    if plan.get("cwd"):
        os.chdir(plan["cwd"])
    from .__main__ import main as worker_main
    return worker_main(["--request-fd", "3", "--event-fd", "4"])

