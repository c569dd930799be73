"""bench/host_speed.py's summaries: which host_loop_ms samples count as slow, and the runs of fast
and slow samples in a trace (whether a CPU switches often or stays slow)."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("host_speed", ROOT / "bench" / "host_speed.py")
host_speed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host_speed)


def test_slow_samples_are_those_well_above_the_fastest():
    s = host_speed.summary([0.25, 0.26, 0.45, 0.44, 0.25], fastest=0.25)
    assert s["n"] == 5 and s["min"] == 0.25 and s["median"] == 0.26
    assert s["slow_share"] == 0.4  # 0.45 and 0.44 are above 1.3 x 0.25; 0.26 is not


def test_a_trace_is_cut_into_runs_of_fast_and_slow():
    trace = [0.25, 0.25, 0.45, 0.46, 0.47, 0.25, 0.45]
    assert host_speed.runs(trace, fastest=0.25) == [("F", 2), ("s", 3), ("F", 1), ("s", 1)]
    assert host_speed.runs([], fastest=0.25) == []
