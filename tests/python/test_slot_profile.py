"""bench/slot_profile.py's split of a candidate's slot: under --slot-at launch a candidate holds
the slot several times (handed back between full-size calls); every hold counts, before, during
and after its timed loops, not only the last one."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("slot_profile", ROOT / "bench" / "slot_profile.py")
slot_profile = importlib.util.module_from_spec(spec)
spec.loader.exec_module(slot_profile)


def test_every_hold_of_a_candidate_is_counted(tmp_path):
    trace = tmp_path / "trace.txt"
    # the job starts at 100 s; holds 105-106 (its first full call), 108-112 (its second call,
    # then the timed loops from 109 to 111.5)
    trace.write_text("\n".join([
        "100.0 job_start pipeline T/x",
        "105.0 acquire gpu-0.lock candidate T/x",
        "106.0 release gpu-0.lock candidate T/x",
        "108.0 acquire gpu-0.lock candidate T/x",
        "112.0 release gpu-0.lock candidate T/x",
    ]) + "\n")
    timeline = ("kbx: T/x: timeline: before spawn 0.00 s | 9.00 quiet_wanted | 9.10 quiet_done "
                "| 10.00 timing perf_a seconds=1.00 | 11.50 timing perf_b seconds=1.00 | 12.00 done")
    holds = slot_profile.candidate_holds(str(trace), [timeline])
    before, loops, after = holds["T/x"]
    assert abs(before - 2.0) < 1e-9  # 105-106 and 108-109
    assert abs(loops - 2.5) < 1e-9   # 109-111.5
    assert abs(after - 0.5) < 1e-9   # 111.5-112


def test_the_holds_at_the_batches_heads_are_summed_and_shown(capsys):
    timeline = ("kbx: T/x: timeline: before spawn 0.00 s | 10.00 timing perf_a seconds=1.00 "
                "setup_s=0.10 estimate_s=0.20 batches_s=0.60 holds_s=0.15 flush_s=0.05 "
                "timed_s=0.300 samples=20 | 11.50 timing perf_b seconds=0.50 setup_s=0.00 "
                "estimate_s=0.10 batches_s=0.30 holds_s=0.05 flush_s=0.05 timed_s=0.200 samples=10")
    parts, n = slot_profile.timing_parts(timeline)
    assert n == 2 and abs(parts["holds_s"] - 0.2) < 1e-9 and parts["samples"] == 30
    slot_profile.print_timing_parts(parts, n)
    assert "(the calls' own 0.5 s, the holds 0.2 s)" in capsys.readouterr().out


def test_the_reference_workers_lives_are_summed(capsys):
    """Session 43's debug line of a reference worker: its hello, done, exit and frozen seconds,
    summed over the workers; a worker that never said done adds no teardown."""
    lines = [
        "kbx: reference worker for A/x (2 tasks): forked from the warm parent, hello after 0.30 s, "
        "done at 10.00 s, exited at 10.25 s, frozen 3.50 s",
        "kbx: reference worker for B/y (1 tasks): started cold, hello after 0.50 s, "
        "done at 6.00 s, exited at 6.75 s, frozen 1.50 s",
        "kbx: reference worker for C/z (2 tasks): forked from the warm parent, hello after 0.20 s, "
        "done at -1.00 s, exited at 4.00 s, frozen 0.00 s",
        "kbx: reference worker for D/w (2 tasks): forked from the warm parent, hello after 0.25 s",
    ]
    w = slot_profile.reference_workers(lines)
    assert w["workers"] == 3 and w["tasks"] == 5
    assert abs(w["done"] - 16.0) < 1e-9 and abs(w["teardown"] - 1.0) < 1e-9
    assert abs(w["frozen"] - 5.0) < 1e-9 and abs(w["hello"] - 1.0) < 1e-9
    slot_profile.print_reference_workers(lines)
    out = capsys.readouterr().out
    assert "5.0 s (31%) frozen" in out, out
    assert slot_profile.reference_workers(lines[3:]) is None
