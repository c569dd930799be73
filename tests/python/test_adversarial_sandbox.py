"""The sandbox's adversarial candidates (tests/adversarial/sandbox/, written by
tests/adversarial/make_sandbox.py) in one run on the CPU, beside an honest kernel.

Each attack returns the right answer only when it works, so each must get its table's status
(never `passed`); the honest kernel must pass; nothing may outlive the run, leave a marker, or
change kbx's tree or the database after kbx exits. A control run with the confinement off shows
that the harmless attacks are real: they pass there.
"""

import hashlib
import json
import os
import pathlib
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import ROOT, kbx_binary

# Run alone (make test-python): it checks that no process of a sandbox uid is left, which any
# other kbx eval running at the same time would break.
pytestmark = pytest.mark.alone

ADV = ROOT / "tests" / "adversarial"
SANDBOX = ADV / "sandbox"
SECRET = "hunter2-adversarial"
# On the GPU machine (bench/sandbox_gpu.sh): KBX_ADVERSARIAL_DEVICE=cuda. There the job's cgroup
# limits memory, so the memory attack is killed (oom) instead of meeting an rlimit; and a fork
# bomb that holds the process limit leaves Triton's compiler no process to start
# (runtime_error). Both as seen on the H200 (bench/results/2026-12-01-h200/).
DEVICE = os.environ.get("KBX_ADVERSARIAL_DEVICE", "cpu")
ON_CUDA = {"exhaust_memory": "oom", "fork_bomb": "runtime_error"}


def _expected():
    rows = {}
    for line in (SANDBOX / "README.md").read_text().splitlines():
        m = re.match(r"\| (\w+) \| (\S+\.py) \| (\w+) \|", line)
        if m:
            attack, path, status = m.groups()
            if DEVICE == "cuda":
                status = ON_CUDA.get(attack, status)
            task = path.split("/", 1)[1][:-3]
            rows[task] = (attack, path, status)
    return rows


def _isolation():
    out = subprocess.run([kbx_binary(), "doctor"], capture_output=True, text=True).stdout
    m = re.search(r"candidate isolation (\w+)", out)
    return m.group(1) if m else "unknown"


def _fill(text, values):
    for name, value in values.items():
        text = text.replace(f"{name} = None", f"{name} = {value!r}")
    return text


def _digest(paths):
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def _sandbox_processes():
    """Pids of processes running as a sandbox uid (2e9 and above) or named like the daemon."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{pid}").st_uid
            name = pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if uid >= 2_000_000_000 or name == "kbxadvdaemon":
            found.append((int(pid), uid, name))
    return found


@pytest.fixture
def servers(tmp_path):
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    sock_path = str(tmp_path / "host.sock")
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(sock_path)
    unix.listen(8)
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind("\0kbx-adversarial")
    abstract.listen(8)
    host_file = tmp_path / "host-file.txt"
    host_file.write_text("a file of the host's, readable by everyone")
    host_file.chmod(0o644)
    yield {"PROBE_PORT": tcp.getsockname()[1], "SOCKET_PATH": sock_path,
           "HOST_FILE": str(host_file)}
    for s in (tcp, unix, abstract):
        s.close()


def _candidates(folder, values, only=None):
    for task, (attack, path, _) in _expected().items():
        if only and attack not in only:
            continue
        dest = folder / (task + ".py")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(_fill((SANDBOX / path).read_text(), values))
    honest = folder / "Math" / "add.py"
    honest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "solutions" / "expert" / "Math" / "add.py", honest)


def _eval(tmp_path, name, extra=(), env_extra=None):
    env = dict(os.environ, KBX_TEST_SECRET=SECRET, OPENAI_API_KEY="sk-adversarial")
    env.update(env_extra or {})
    db = tmp_path / f"{name}.db"
    proc = subprocess.run(
        [kbx_binary(), "eval", "--method", name, "--candidates", str(tmp_path / name),
         "--device", DEVICE, "--tiers", "edge,small", "--db", str(db),
         "--work", str(tmp_path / "work"), "--job-disk-mb", "64", "--job-memory-mb", "8192",
         "--timeout", "300", *extra],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    return proc, db


def _statuses(db):
    con = sqlite3.connect(db)
    rows = con.execute("select task, status, detail from results").fetchall()
    con.close()
    return {t: (s, d) for t, s, d in rows}


def test_make_sandbox_candidates_up_to_date():
    proc = subprocess.run([sys.executable, str(ADV / "make_sandbox.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_every_sandbox_attack_fails_and_the_run_goes_on(tmp_path, servers):
    if _isolation() != "full":
        pytest.skip("this machine cannot confine candidates (kbx doctor: not root or no "
                    "namespaces); the attacks would run with the tester's rights")
    markers = tmp_path / "markers"
    markers.mkdir()
    markers.chmod(0o777)
    values = dict(servers, MARKER_DIR=str(markers))
    _candidates(tmp_path / "adversarial", values)
    guarded = list((ROOT / "python" / "kbx_worker").glob("*.py"))
    guarded += [ROOT / "tasks" / t / "reference.py" for t in _expected()]
    before = _digest(guarded)

    proc, db = _eval(tmp_path, "adversarial")
    assert proc.returncode == 0, proc.stderr[-3000:]
    statuses = _statuses(db)
    time.sleep(2)  # a daemon that survived would act now
    assert _statuses(db) == statuses, "the results changed after kbx exited"

    assert statuses["Math/add"][0] == "passed", statuses["Math/add"]
    wrong = {}
    for task, (attack, _, expected) in _expected().items():
        got = statuses.get(task, ("missing", ""))
        if got[0] != expected:
            wrong[attack] = (expected, got[0], got[1][:300])
    assert not wrong, json.dumps(wrong, indent=1)
    assert len(statuses) == len(_expected()) + 1

    assert list(markers.iterdir()) == [], "a planted file or a daemon ran outside the sandbox"
    assert _sandbox_processes() == [], "processes of the sandbox outlived the run"
    assert _digest(guarded) == before, "kbx's tree or a task's reference was written"
    assert not list((tmp_path / "work").glob("*/jobs/*")), "job folders left behind"


def test_harmless_attacks_work_without_the_confinement(tmp_path, servers):
    """The control: with the confinement off (and only network namespaces), the attacks that
    harm nothing get through, so the first test's statuses come from the sandbox."""
    if _isolation() != "full":
        pytest.skip("needs a machine where the confinement is the only difference")
    harmless = {"read_reference_outputs", "read_supervisor_secrets", "unix_socket",
                "read_host_files"}
    _candidates(tmp_path / "control", dict(servers, MARKER_DIR=str(tmp_path)), only=harmless)
    proc, db = _eval(tmp_path, "control", extra=["--allow-unisolated"],
                     env_extra={"KBX_CONFINE": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "NOT confined" in proc.stderr
    statuses = _statuses(db)
    got = {_expected()[t][0]: s for t, (s, _) in statuses.items() if t in _expected()}
    assert got == {a: "passed" for a in harmless}, got
