"""bench/pressure_gpu.py's summary of per-round medians (the GPU part runs on the GPU machine)."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("pressure_gpu", ROOT / "bench" / "pressure_gpu.py")
pressure_gpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pressure_gpu)  # imports torch; nothing of the GPU until main()


def test_rounds_behind_the_fastest_are_counted():
    times = [0.0903, 0.0905, 0.1056, 0.0904, 0.1060, 0.0975]
    fast, mid, slow, behind = pressure_gpu.summarize(times, 0.08)
    assert (fast, slow, behind) == (0.0903, 0.1060, 2)  # 0.0975 is 7.97% behind: not counted
    assert abs(mid - 0.0940) < 1e-9
    assert pressure_gpu.line("relu", "pressure", times, 0.08) == (
        "relu pressure: fastest 0.0903 ms, median 0.0940, slowest 0.1060 (17.4% behind); "
        "2 of 6 rounds over 8% behind")


def test_slow_rounds_show_what_the_other_buffers_gave():
    times = {"fresh": [0.0903, 0.1056, 0.0905], "input_copies": [0.0904, 0.0902, 0.0906],
             "output_ring": [0.0903, 0.1050, 0.0904]}
    assert pressure_gpu.slow_rounds_line(times, 0.08) == (
        "slow rounds (fresh/input copies/output ring ms): 0.1056/0.0902/0.1050")
    times["fresh"][1] = 0.0910
    assert pressure_gpu.slow_rounds_line(times, 0.08).endswith(": none")
    # kbx's own timer's two ways, when timed, follow in the same row
    times = {"fresh": [0.0903, 0.1056], "input_copies": [0.0904, 0.0902],
             "output_ring": [0.0903, 0.0904], "kbx_timer": [0.0905, 0.1049],
             "kbx_timer_ring": [0.0906, 0.1051]}
    assert pressure_gpu.slow_rounds_line(times, 0.08) == (
        "slow rounds (fresh/input copies/output ring/kbx timer/kbx timer ring ms): "
        "0.1056/0.0902/0.0904/0.1049/0.1051")


def test_a_condition_with_no_room_says_so():
    assert pressure_gpu.line("relu", "fill0.95_carved fresh", [], 0.08) == (
        "relu fill0.95_carved fresh: no round had room")
    empty = {"fresh": [], "input_copies": [], "output_ring": []}
    assert pressure_gpu.slow_rounds_line(empty, 0.08) == "slow rounds: none timed"


def test_kbx_timer_ways_line_up_with_their_names(monkeypatch):
    """With kbx's timer, each round's five medians land under their own names, in order; the
    timer is asked without kept outputs first, then with three."""
    asked = []

    class FakeTimer:
        keep_outputs = None

        def run(self, fn):
            asked.append(self.keep_outputs)
            return [1.0, 2.0, 3.0]

    timer = FakeTimer()
    assert pressure_gpu._kbx_timed(timer, 3, lambda: None) == 2.0 and asked == [3]
    rows = iter([(0.1, 0.2, 0.3, 0.4, 0.5), (1.1, 1.2, 1.3, 1.4, 1.5)])
    monkeypatch.setattr(pressure_gpu, "_round", lambda *a: next(rows))
    monkeypatch.setattr(pressure_gpu.torch.cuda, "empty_cache", lambda: None)
    workload = ("w", None, 1, 1, None)
    times = pressure_gpu._rounds(workload, 2, 3, None, False, timer)
    assert times == {"fresh": [0.1, 1.1], "input_copies": [0.2, 1.2], "output_ring": [0.3, 1.3],
                     "kbx_timer": [0.4, 1.4], "kbx_timer_ring": [0.5, 1.5]}
    rows = iter([(0.1, 0.2, 0.3)])
    assert list(pressure_gpu._rounds(workload, 1, 3, None, False)) == [
        "fresh", "input_copies", "output_ring"]


class _At:
    """A stand-in for a tensor at an address."""

    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


def test_places_say_where_slow_and_fast_rounds_lay():
    mib = 1 << 20
    place = pressure_gpu.place_of([_At(1024 * mib + mib // 2)], _At(1152 * mib + mib // 2))
    assert place == {"in_mod_2mib": [mib // 2], "out_minus_in": [128 * mib]}
    assert pressure_gpu.place_line(place) == (
        "inputs at 0.500 MiB into a 2 MiB page, output +128.0 MiB from them")
    far = pressure_gpu.place_of([_At(0)], _At(2 * mib))
    lines = pressure_gpu.places_lines([0.0903, 0.1056], [far, place], 0.08)
    assert lines == ["slow 0.1056 ms: " + pressure_gpu.place_line(place),
                     "fast 0.0903 ms: " + pressure_gpu.place_line(far)]
    assert pressure_gpu.places_lines([0.0903], [], 0.08) == []  # not recorded: nothing said


def test_a_round_out_of_memory_leaves_no_place(monkeypatch):
    calls = iter(["ok", "oom", "ok"])

    def fake_round(*args):
        places = args[-1]
        places.append({"round": len(places)})
        if next(calls) == "oom":
            raise pressure_gpu.torch.cuda.OutOfMemoryError("no room")
        return (0.1, 0.2, 0.3)
    monkeypatch.setattr(pressure_gpu, "_round", fake_round)
    monkeypatch.setattr(pressure_gpu.torch.cuda, "empty_cache", lambda: None)
    places = []
    times = pressure_gpu._rounds(("w", None, 1, 1, None), 3, 3, None, False, None, places)
    assert len(times["fresh"]) == 2 and len(places) == 2
