"""bench/clocks_at_holds.py: the GPU's clocks placed on the slot trace's holds, per task and side,
the tasks with a case apart first; nvidia-smi's local time brought onto the monotonic clock."""
import datetime
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "clocks_at_holds.py"

from test_two_states import _db  # noqa: E402  (a results database of such rows)


def test_clocks_are_placed_on_each_sides_holds(tmp_path):
    # The machine: wall 1_000_000_000.0 (2001-09-09 01:46:40 UTC) at monotonic 100.0; nvidia-smi
    # writes local time two hours ahead (a zone of UTC+2).
    clocks = tmp_path / "clocks.csv"
    lines = ["Failed to query something"]  # an error line: skipped
    for k in range(0, 40):  # one sample each 0.1 s from monotonic 99.9
        mono = 99.9 + k / 10
        sm = 1200 if 101.0 <= mono <= 101.5 else 1980  # low during the references' hold
        wall = 1_000_000_000.0 + (mono - 100.0) + 7200
        stamp = datetime.datetime.fromtimestamp(wall, datetime.timezone.utc)
        lines.append(f"{stamp:%Y/%m/%d %H:%M:%S.%f}"[:-3] + f", {sm}, 2619, 300.5, 40, 90, 80")
    clocks.write_text("\n".join(lines) + "\n")
    pair = tmp_path / "pair.txt"
    pair.write_text("1000000000.05 100.05\n")
    trace = tmp_path / "trace.txt"
    trace.write_text(
        "101.0 acquire gpu-0.lock references A/relu\n101.5 release gpu-0.lock references A/relu\n"
        "102.0 acquire gpu-0.lock candidate A/relu\n102.4 release gpu-0.lock candidate A/relu\n"
        "102.6 acquire gpu-0.lock candidate B/add\n102.9 release gpu-0.lock candidate B/add\n"
        "103.0 fed pipeline B/add\n")
    db = _db(tmp_path / "run.db", [("A/relu", "perf_64M", 0.090, 0.1056, ""),
                                   ("B/add", "perf", 0.2, 0.2, "")])
    out = subprocess.run([sys.executable, str(SCRIPT), "--trace", str(trace), "--clocks",
                          str(clocks), "--pair", str(pair), "--db", db],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("40 samples over 4 s; 1 tasks with a case over 0.08 apart")
    assert lines[1].startswith("A/relu  ref: sm   1200 MHz, mem  2619 MHz,   300 W (6)")
    assert "can: sm   1980 MHz" in lines[1] and lines[1].endswith("apart: perf_64M 1.173")
    assert lines[2].startswith("B/add  ref: sm    nan MHz") and "(0)" in lines[2]
    assert "references' holds, tasks apart: sm   1200 MHz" in out.stdout
    assert "candidate' holds, the others: sm   1980 MHz, mem  2619 MHz,   300 W (4)" in out.stdout


def test_a_record_with_no_sample_is_refused_by_name(tmp_path):
    clocks = tmp_path / "clocks.csv"
    clocks.write_text("Field \"clocks_event_reasons.active\" is not a valid field\n")
    for name in ("pair.txt", "trace.txt"):
        (tmp_path / name).write_text("1 2\n")
    out = subprocess.run([sys.executable, str(SCRIPT), "--trace", str(tmp_path / "trace.txt"),
                          "--clocks", str(clocks), "--pair", str(tmp_path / "pair.txt"),
                          "--db", _db(tmp_path / "r.db", [])], capture_output=True, text=True)
    assert out.returncode == 2 and str(clocks) in out.stderr
