"""`kbx calibrate` end to end on the CPU, and roofline fractions in `kbx results` from it."""

import csv
import io
import json
import os
import sqlite3
import subprocess
import sys

import pytest

from conftest import ROOT
from standins import Events, StandInTimer


def _env():
    env = dict(os.environ)
    env.setdefault("KBX_PYTHON", sys.executable)
    return env


def _calibrations(db):
    with sqlite3.connect(db) as con:
        return con.execute("SELECT id, fingerprint, device, gpu, peaks, environment "
                           "FROM calibration ORDER BY id").fetchall()


def test_cpu_calibration_is_stored_and_printed(kbx, tmp_path):
    db = tmp_path / "tmp.db"
    proc = kbx("calibrate", "--device", "cpu", "--db", str(db), env=_env(), check=True)
    assert "calibration 1: cpu" in proc.stdout
    lines = {line.split()[0]: line for line in proc.stdout.splitlines()[2:] if line.strip()}
    assert "GB/s" in lines["copy_bw"]
    assert "FLOP/s" in lines["fp32"]
    for name in ("tf32", "bf16", "fp16", "int8"):
        assert "skipped" in lines[name]
    assert "kbx: calibrate: copy_bw" in proc.stderr  # progress as each peak arrives

    (row,) = _calibrations(db)
    _, fingerprint, device, gpu, peaks, environment = row
    assert device == "cpu" and gpu
    peaks = json.loads(peaks)
    assert set(peaks) == {"copy_bw", "fp32"}
    assert all(v > 0 for v in peaks.values())
    environment = json.loads(environment)
    assert environment["fingerprint"] == fingerprint and len(fingerprint) == 16
    assert environment["samples"]["fp32"] >= 3
    assert set(environment["skipped"]) == {"tf32", "bf16", "fp16", "int8"}

    kbx("calibrate", "--device", "cpu", "--db", str(db), env=_env(), check=True)
    assert [r[0] for r in _calibrations(db)] == [1, 2]
    assert _calibrations(db)[1][1] == fingerprint  # same machine, same fingerprint


def test_without_a_gpu_cuda_is_refused(kbx, tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    db = tmp_path / "tmp.db"
    proc = kbx("calibrate", "--db", str(db), env=_env())
    assert proc.returncode == 2
    assert "no GPU: calibrate needs one (use --device cpu to measure this CPU)" in proc.stderr
    assert not db.exists() or not _has_table(db)


def _has_table(db):
    with sqlite3.connect(db) as con:
        return con.execute("SELECT 1 FROM sqlite_master WHERE name='calibration'").fetchone()


def test_bad_db_folder_is_named(kbx, tmp_path):
    proc = kbx("calibrate", "--device", "cpu", "--db", str(tmp_path / "nope" / "k.db"), env=_env())
    assert proc.returncode == 2
    assert "nope" in proc.stderr and "does not exist" in proc.stderr


def _add_timed_result(db, fingerprint):
    """A run with this fingerprint and one timed bf16 case: 2e9 flop, 1e6 bytes in 1 ms."""
    with sqlite3.connect(db) as con:
        env = json.dumps({"fingerprint": fingerprint, "torch": "x"})
        run = con.execute("INSERT INTO runs(run_key, method, device, track, seed, started_at, "
                          "environment) VALUES('k', 'm', 'cpu', 'any', 1, 'now', ?)",
                          (env,)).lastrowid
        cand = con.execute("INSERT INTO candidates(method, task, sha256, source, imported_at) "
                           "VALUES('m', 'Math/add', 'h', 's', 'now')").lastrowid
        res = con.execute("INSERT INTO results(run_id, candidate_id, method, task, category, "
                          "status, cases_total, cases_passed, created_at) VALUES(?, ?, 'm', "
                          "'Math/add', 'Math', 'passed', 1, 1, 'now')", (run, cand)).lastrowid
        con.execute("INSERT INTO case_results(result_id, name, tier, status, cand_ms, flops, "
                    "bytes, dtype) VALUES(?, 'perf', 'full', 'passed', 1.0, 2e9, 1e6, "
                    "'float32')", (res,))


def test_results_report_roofline_against_the_calibration(kbx, tmp_path):
    db = tmp_path / "tmp.db"
    timed_only = tmp_path / "uncalibrated.db"
    kbx("calibrate", "--device", "cpu", "--db", str(db), env=_env(), check=True)
    ((_, fingerprint, _, _, peaks, _),) = _calibrations(db)
    peaks = json.loads(peaks)
    _add_timed_result(db, fingerprint)

    doc = json.loads(kbx("results", "--db", str(db), "--format", "json", check=True).stdout)
    case = doc["results"][0]["cases"][0]
    assert case["achieved_flops"] == pytest.approx(2e12)
    assert case["achieved_bytes_per_s"] == pytest.approx(1e9)
    bound = max(2e9 / peaks["fp32"], 1e6 / peaks["copy_bw"])
    assert case["roofline_fraction"] == pytest.approx(bound / 1e-3)
    assert doc["runs"][0]["calibration"]["matched_by"] == "fingerprint"

    table = kbx("results", "--db", str(db), check=True).stdout
    assert "roofline" in table.splitlines()[0]
    assert "roofline against calibration 1 (cpu" in table
    assert "float32 cases are held to the fp32 peak" in table

    rows = list(csv.DictReader(io.StringIO(
        kbx("results", "--db", str(db), "--format", "csv", check=True).stdout)))
    assert float(rows[0]["best_roofline_fraction"]) == pytest.approx(bound / 1e-3, rel=1e-3)

    kbx("import", "dir", str(ROOT / "solutions" / "expert"), "--method", "x", "--db",
        str(timed_only))  # only to create a database of this kbx's schema
    _add_timed_result(timed_only, fingerprint)
    table = kbx("results", "--db", str(timed_only), "--method", "m", check=True).stdout
    assert "no calibration: run kbx calibrate" in table
    rows = list(csv.DictReader(io.StringIO(
        kbx("results", "--db", str(timed_only), "--format", "csv", check=True).stdout)))
    assert rows[0]["best_roofline_fraction"] == ""


def test_an_eval_run_shares_the_calibration_fingerprint(kbx, tmp_path):
    db = tmp_path / "tmp.db"
    kbx("eval", "--method", "expert", "--candidates", str(ROOT / "solutions" / "expert"),
        "--device", "cpu", "--tasks", "Math/add", "--db", str(db), "--work",
        str(tmp_path / "work"), env=_env(), check=True)
    kbx("calibrate", "--device", "cpu", "--db", str(db), env=_env(), check=True)
    with sqlite3.connect(db) as con:
        (environment,) = con.execute("SELECT environment FROM runs").fetchone()
    environment = json.loads(environment)
    assert environment["fingerprint"] == _calibrations(db)[0][1]
    assert environment["kbx_revision"]
    # the host's facts, from the first reference worker's hello (bench/compare_runs.py reads the
    # speed): the CPU's model, the CPUs the worker may use, its pure-Python loop's fastest ms
    assert isinstance(environment["cpu"], str) and environment["cpu"]
    assert environment["cpus"] >= 1
    assert 0 < environment["host_loop_ms"] < 100
    table = kbx("results", "--db", str(db), check=True).stdout
    assert "run 1: roofline against calibration 1 (cpu" in table
    assert "matched by fingerprint" in table


# --- the worker's GPU path, driven on the CPU with a stand-in timer ------------------------------

def test_gpu_measurements_report_peaks_with_units(monkeypatch):
    import torch
    from kbx_worker import calibrate_mode as cm
    monkeypatch.setattr(cm, "CUDA_COPY_BYTES", 1 << 20)
    monkeypatch.setattr(cm, "CUDA_MATMUL_N", 64)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    channel, timer = Events(), StandInTimer(reps=3, ms=2.0)
    saved = torch.backends.cuda.matmul.allow_tf32
    cm._cuda_copy(channel, timer, "cpu")
    for name in cm.MATMUL_DTYPES:
        cm._cuda_matmul(channel, timer, "cpu", name)
    torch.backends.cuda.matmul.allow_tf32 = saved
    cm._cuda_int8(channel, timer, "cpu")
    by_name = {e["name"]: e for e in channel.events}
    assert by_name["copy_bw"]["unit"] == "B/s"
    # every pattern took 2 ms: the add (2 reads, 1 write) moved the most bytes per second
    assert by_name["copy_bw"]["value"] == pytest.approx(3 * (1 << 20) / 2e-3)
    assert by_name["copy_bw"]["source"] == "add"
    for name in ("fp32", "tf32", "bf16", "fp16"):
        rate = pytest.approx(2 * 64 ** 3 / 2e-3)
        assert by_name[name] == dict(ev="peak", name=name, value=rate, unit="FLOP/s", samples=3,
                                     median_ms=2.0, fast_ms=2.0, size=64, source="torch")
    assert by_name["int8"]["ev"] in ("peak", "skipped")  # torch._int_mm may not run on a CPU
    if by_name["int8"]["ev"] == "skipped":
        assert by_name["int8"]["reason"]


class DippingTimer:
    """Ten samples: the GPU at its peak for two, its clocks dipped 10% for the other eight."""

    def run(self, fn):
        fn()
        return [1.0, 1.0] + [1.1] * 8


def test_a_peak_is_taken_at_the_fast_end_of_its_samples_not_their_median(monkeypatch):
    """Session 19 on the H200: the bf16 GEMM's median under a long run set the peak below what
    the matmul expert reached (106.7% of its roofline), an honest kernel near impossible_speed."""
    from kbx_worker import calibrate_mode as cm
    monkeypatch.setattr(cm, "CUDA_MATMUL_N", 64)
    monkeypatch.setattr(cm, "CUDA_COPY_BYTES", 1 << 20)
    monkeypatch.setattr(cm.torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(cm, "_triton_gemm", lambda: None)
    saved = cm.torch.backends.cuda.matmul.allow_tf32
    channel = Events()
    cm._cuda_matmul(channel, DippingTimer(), "cpu", "fp32")
    cm._cuda_copy(channel, DippingTimer(), "cpu")
    cm.torch.backends.cuda.matmul.allow_tf32 = saved
    gemm, copy = channel.events
    assert gemm["value"] == pytest.approx(2 * 64 ** 3 / 1e-3)
    assert gemm["median_ms"] == pytest.approx(1.1) and gemm["fast_ms"] == 1.0
    assert copy["value"] == pytest.approx(3 * (1 << 20) / 1e-3)  # the add, at 1 ms
    assert cm.peak_ms([5.0, 1.0, 3.0]) == 1.0
    assert cm.peak_ms([float(k) for k in range(30, 0, -1)]) == 3.0  # 30 samples: the third


class PerPatternTimer:
    """Reports its own milliseconds for each successive measurement (copy, add, sum)."""

    def __init__(self, ms_each):
        self.ms_each = list(ms_each)

    def run(self, fn):
        fn()
        return [self.ms_each.pop(0)] * 3


@pytest.mark.parametrize("ms_each,source,nbytes_per_ms", [
    ((1.0, 10.0, 10.0), "copy", 2 * (1 << 20) / 1.0),
    ((10.0, 10.0, 0.1), "sum", (1 << 20) / 0.1),
])
def test_bandwidth_peak_is_the_fastest_pattern(monkeypatch, ms_each, source, nbytes_per_ms):
    from kbx_worker import calibrate_mode as cm
    monkeypatch.setattr(cm, "CUDA_COPY_BYTES", 1 << 20)
    monkeypatch.setattr(cm.torch.cuda, "empty_cache", lambda: None)
    channel = Events()
    cm._cuda_copy(channel, PerPatternTimer(ms_each), "cpu")
    (peak,) = channel.events
    assert peak["source"] == source
    assert peak["value"] == pytest.approx(nbytes_per_ms * 1e3)


GEMM_CHECK = """
import sys, torch
from kbx_worker import calibrate_mode as cm
gemm = cm._triton_gemm()
assert gemm is not None, "no Triton"
n = 64
g = torch.Generator().manual_seed(3)
if sys.argv[1] == "int8":
    a = torch.randint(-128, 128, (n, n), dtype=torch.int8, generator=g)
    b = torch.randint(-128, 128, (n, n), dtype=torch.int8, generator=g)
    out = torch.empty((n, n), dtype=torch.int32)
    gemm(a, b, out, (32, 32, 32, 4, 1))
    assert torch.equal(out, a.int() @ b.int()), "int8 GEMM differs"
    out.zero_()
    gemm(a, b.t().contiguous().t(), out, (32, 32, 32, 4, 1))  # column-major b, as calibrated
    assert torch.equal(out, a.int() @ b.int()), "int8 GEMM on a column-major b differs"
else:
    a = torch.randn(n, n, generator=g).half()
    b = torch.randn(n, n, generator=g).half()
    out = torch.empty_like(a)
    gemm(a, b, out, (32, 32, 16, 4, 1))
    torch.testing.assert_close(out.float(), a.float() @ b.float(), atol=2e-2, rtol=2e-2)
print("ok")
"""


@pytest.mark.parametrize("dtype", ["int8", "float16"])
def test_the_calibration_triton_gemm_computes_the_product(dtype):
    """The second-opinion GEMM of the dense rates, under the Triton interpreter (in a process of
    its own, which imports Triton with the interpreter on): it must compute A @ B, or its rate
    would be the rate of something else."""
    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT / "python"))
    proc = subprocess.run([sys.executable, "-c", GEMM_CHECK, dtype], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_cuda_request_without_a_gpu_says_so(monkeypatch):
    import torch
    from kbx_worker import calibrate_mode as cm
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    channel = Events()
    cm.run({"mode": "calibrate", "device": "cuda"}, channel)
    assert channel.events == [{"ev": "error", "kind": "no_gpu",
                               "message": "torch sees no CUDA GPU"}]
    with pytest.raises(ValueError, match="device must be"):
        cm.run({"mode": "calibrate", "device": "tpu"}, channel)


def test_nvidia_smi_readings(monkeypatch, tmp_path):
    import torch
    from kbx_worker import calibrate_mode as cm
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\nprintf '570.86.15, 1980, 3201\\n570.86.15, [N/A], 1593\\n'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert cm.machine_facts() == {"driver": "570.86.15",
                                  "clocks": [{"sm": 1980, "mem": 3201}, {"sm": None, "mem": 1593}]}
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert cm.machine_facts() == {"driver": None, "clocks": None}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cm.machine_facts() == {}


def test_clocks_are_read_for_the_visible_gpus_only(monkeypatch, tmp_path):
    import torch
    from kbx_worker import calibrate_mode as cm
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/args\nprintf '580.1, 1980, 3201\\n'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert cm.machine_facts()["clocks"] == [{"sm": 1980, "mem": 3201}]
    assert "--id=1" in (tmp_path / "args").read_text().split()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU visible is not "all of them"
    cm.machine_facts()
    assert "--id=1" not in (tmp_path / "args").read_text()


def test_a_failed_measurement_is_a_skipped_row(monkeypatch):
    from kbx_worker import calibrate_mode as cm
    channel = Events()

    def out_of_memory():
        raise RuntimeError("CUDA out of memory. Tried to allocate 1.00 GiB\nmore")

    cm._measured(channel, "copy_bw", out_of_memory)
    cm._measured(channel, "fp32", lambda: channel.send("peak", name="fp32"))
    assert channel.events == [
        {"ev": "skipped", "name": "copy_bw",
         "reason": "RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB"},
        {"ev": "peak", "name": "fp32"}]


def test_a_reference_workers_hello_has_the_machines_facts_only_when_asked(monkeypatch):
    # one nvidia-smi call per hello: kbx reads a reference worker's facts until the run's
    # environment is saved (its first chunk's), then asks the next 90-odd workers for none
    import torch
    import kbx_worker.__main__ as worker_main
    from kbx_worker import calibrate_mode as cm
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "Fake GPU")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda i=0: type("P", (), {"total_memory": 1 << 30})())
    calls = []
    monkeypatch.setattr(cm, "machine_facts", lambda: calls.append(1) or {"driver": "580.1"})

    class Channel:
        def send(self, kind, **ev):
            self.ev = (kind, ev)

    for request, wanted in (({"mode": "reference"}, True),
                            ({"mode": "reference", "machine_facts": True}, True),
                            ({"mode": "reference", "machine_facts": False}, False),
                            ({"mode": "candidate"}, False)):
        channel, calls[:] = Channel(), []
        worker_main._hello(channel, request)
        kind, ev = channel.ev
        assert kind == "hello" and ev["gpu"] == "Fake GPU" and ev["gpu_memory"] == 1 << 30
        assert (ev.get("driver") == "580.1") == wanted and len(calls) == int(wanted), request
