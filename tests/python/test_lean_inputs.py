"""Issue 14: a reference keeps no inputs file for a full-size case whose generator rebuilds its
inputs bit for bit and which it leaves unchanged (lean_inputs); the candidate's worker rebuilds
them, and fails the case with a clear error when it cannot."""

import json
import os
import sqlite3
import textwrap
import weakref

import pytest
import torch

from conftest import ROOT
from standins import Events, SCALE_REFERENCE, SCALE_TOML, run_candidate, run_reference
from kbx_worker import candidate_mode

# the candidates (honest and hostile) of tests/adversarial/verdict/lean_inputs
LEAN = ROOT / "tests" / "adversarial" / "verdict" / "lean_inputs" / "Math"

PLAIN = SCALE_REFERENCE

IN_PLACE = textwrap.dedent('''
    from kbx_worker.casegen import Case

    def scale(x, factor):
        x.mul_(factor)
        return x

    def cases():
        return [Case("perf_one", "full", lambda c: ((c.randn(64), 3.0), {}))]
''')

RANDOM = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def scale(x, factor):
        return x * factor + torch.rand_like(x)

    def cases():
        return [Case("perf_one", "full", lambda c: ((c.randn(64), 3.0), {}), random=True)]
''')

# a generator that gives other values every time it runs (a counter outside the seed)
NOT_REPRODUCIBLE = textwrap.dedent('''
    import itertools
    from kbx_worker.casegen import Case

    _calls = itertools.count()

    def scale(x, factor):
        return x * factor

    def cases():
        return [Case("perf_one", "full",
                     lambda c: ((c.randn(64) + float(next(_calls)), 3.0), {}))]
''')

# torch.linspace without a dtype follows torch's default dtype
DEFAULT_DTYPE = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def scale(x, factor):
        return x * factor

    def cases():
        return [Case("perf_one", "full",
                     lambda c: ((c.randn(64) + torch.linspace(0, 1, 64), 3.0), {}))]
''')


# a call of scalars only (Random/logspace's): its inputs file is empty
SCALARS_ONLY = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def ramp(start, end, steps):
        return torch.linspace(start, end, steps)

    def cases():
        return [Case("perf_one", "full", lambda c: ((0.0, 1.0, 4096), {}))]
''')


def _reference(tmp_path, text, **job):
    fields = {"lean_inputs": True, **job}
    return run_reference(tmp_path, text, "T/scale", "scale", ["edge", "small", "full"], **fields)


def test_no_inputs_file_for_an_unchanged_reproducible_full_case(tmp_path):
    out, cases = _reference(tmp_path, PLAIN, fresh_twin=True)
    files = set(os.listdir(out))
    assert "perf_one.in.kbt" not in files and "perf_one__fresh.in.kbt" not in files
    assert {"perf_one.ref.kbt", "perf_one__fresh.ref.kbt", "small_one.in.kbt"} <= files
    assert cases["perf_one"]["in_file"] is False
    assert cases["perf_one__fresh"]["in_file"] is False
    assert cases["small_one"]["in_file"] is True  # small files are kept: they cost nothing


def test_every_inputs_file_is_kept_without_lean_inputs(tmp_path):
    out, cases = _reference(tmp_path, PLAIN, lean_inputs=False, fresh_twin=True)
    assert {"perf_one.in.kbt", "perf_one__fresh.in.kbt"} <= set(os.listdir(out))
    assert all(ev["in_file"] for ev in cases.values())


def test_the_file_is_kept_where_the_reference_updates_inputs(tmp_path):
    out, cases = _reference(tmp_path, IN_PLACE)
    assert "perf_one.in.kbt" in os.listdir(out) and cases["perf_one"]["in_file"] is True


def test_the_file_is_kept_for_a_random_case(tmp_path):
    out, cases = _reference(tmp_path, RANDOM)
    assert "perf_one.in.kbt" in os.listdir(out) and cases["perf_one"]["in_file"] is True


def test_the_file_is_kept_where_the_generator_does_not_reproduce_its_values(tmp_path):
    out, cases = _reference(tmp_path, NOT_REPRODUCIBLE)
    assert "perf_one.in.kbt" in os.listdir(out) and cases["perf_one"]["in_file"] is True


@pytest.fixture(autouse=True)
def _torch_restored():
    """The candidates here run in this process and change torch (its default dtype, a patched
    torch.randn): put back for the tests that follow."""
    randn, dtype = torch.randn, torch.get_default_dtype()
    yield
    torch.randn = randn
    torch.set_default_dtype(dtype)


def _candidate(tmp_path, out, cases, source):
    return run_candidate(tmp_path, out, cases, source)


def test_an_honest_candidate_rebuilds_the_unkept_inputs(tmp_path):
    out, cases = _reference(tmp_path, PLAIN)
    events, job = _candidate(tmp_path, out, cases, (LEAN / "scale_honest.py").read_text())
    done = {e["case"]: e for e in events if e["ev"] == "case"}
    assert set(done) == {"small_one", "perf_one"}
    assert done["perf_one"]["inputs_from"] == "rebuilt"
    assert not [e for e in events if e["ev"] == "error"]
    assert (job / "perf_one.cand.kbt").exists()


def test_a_candidate_changing_the_default_dtype_still_gets_the_inputs(tmp_path):
    """torch.set_default_dtype at import (a habit of some numerical code) would change what the
    task's generator builds; the worker builds inputs under the reference's default."""
    out, cases = _reference(tmp_path, DEFAULT_DTYPE)
    assert cases["perf_one"]["in_file"] is False
    events, _ = _candidate(tmp_path, out, cases, textwrap.dedent('''
        import torch
        torch.set_default_dtype(torch.float64)

        def scale(x, factor):
            return x * factor
    '''))
    done = {e["case"]: e for e in events if e["ev"] == "case"}
    assert done["perf_one"]["inputs_from"] == "rebuilt"
    assert not [e for e in events if e["ev"] == "error"]


def test_a_candidate_that_spoils_the_generator_fails_the_case_with_a_clear_error(tmp_path):
    """A patched torch.randn makes the rebuilt inputs differ from the reference's checksums, and
    no file is kept to fall back on: the case fails as the candidate's runtime error, naming
    the inputs, and the worker goes on (no crash, no case event for it)."""
    out, cases = _reference(tmp_path, PLAIN)
    events, _ = _candidate(tmp_path, out, cases,
                           (LEAN / "scale_spoils_generator.py").read_text())

    errors = [e for e in events if e["ev"] == "error"]
    assert len(errors) == 1
    assert errors[0]["phase"] == "inputs" and errors[0]["kind"] == "runtime_error"
    assert errors[0]["case"] == "perf_one" and "inputs" in errors[0]["message"]
    # the small case's inputs come from its file (its rebuild does not match either)
    done = {e["case"]: e for e in events if e["ev"] == "case"}
    assert set(done) == {"small_one"} and done["small_one"]["inputs_from"] == "file"


def test_a_passing_out_of_memory_is_waited_out(tmp_path, monkeypatch):
    """The GPU's memory short for a moment (other jobs' files and inputs): the rebuild frees the
    worker's cache and tries again; the case runs on the reference's inputs, with no error."""
    out, cases = _reference(tmp_path, PLAIN)
    monkeypatch.setattr(candidate_mode, "REBUILD_OOM_PAUSES_S", (0.0, 0.0, None))
    rebuild = candidate_mode.CaseInputs._rebuild
    tries = []

    def short_once(self, spec, seed):
        tries.append(spec.name)
        if tries.count("perf_one") == 1 and spec.name == "perf_one":
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return rebuild(self, spec, seed)

    monkeypatch.setattr(candidate_mode.CaseInputs, "_rebuild", short_once)
    events, _ = _candidate(tmp_path, out, cases, (LEAN / "scale_honest.py").read_text())
    done = {e["case"]: e for e in events if e["ev"] == "case"}
    assert not [e for e in events if e["ev"] == "error"]
    assert done["perf_one"]["inputs_from"] == "rebuilt"
    assert tries.count("perf_one") == 2  # the first try ran out of memory


def _never_enough_memory(monkeypatch):
    """Every rebuild of inputs runs out of the GPU's memory (three tries, no pauses); returns
    the list of the cases tried, one entry a try."""
    monkeypatch.setattr(candidate_mode, "REBUILD_OOM_PAUSES_S", (0.0, 0.0, None))
    tries = []

    def no_memory(self, spec, seed):
        tries.append(spec.name)
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(candidate_mode.CaseInputs, "_rebuild", no_memory)
    return tries


def test_inputs_out_of_memory_is_oom_not_a_runtime_error(tmp_path, monkeypatch):
    """An honest candidate whose full case's inputs cannot be built for want of memory is not
    blamed with a runtime error: the case reports oom (the supervisor runs it again alone), after
    every try, and names the case and the memory."""
    out, cases = _reference(tmp_path, PLAIN)
    tries = _never_enough_memory(monkeypatch)
    events, _ = _candidate(tmp_path, out, cases, (LEAN / "scale_honest.py").read_text())
    errors = [e for e in events if e["ev"] == "error"]
    assert len(errors) == 1, errors
    assert errors[0]["kind"] == "oom" and errors[0]["case"] == "perf_one"
    assert errors[0]["phase"] == "inputs" and "out of memory" in errors[0]["message"]
    assert tries.count("perf_one") == 3
    assert tries.count("small_one") == 1  # a file to read instead: no waiting


def test_a_failed_try_frees_what_it_built_before_the_next(tmp_path, monkeypatch):
    """The memory the generator took before it ran out must be free for the next try: the error
    kept for the message does not keep the generator's frames (and their tensors) alive."""
    out, cases = _reference(tmp_path, PLAIN)
    monkeypatch.setattr(candidate_mode, "REBUILD_OOM_PAUSES_S", (0.0, None))
    rebuild = candidate_mode.CaseInputs._rebuild
    held = []

    def half_built(self, spec, seed):
        if spec.name == "perf_one" and not held:
            partial = torch.empty(1 << 20)  # what a generator had made when it ran out
            held.append(weakref.ref(partial))
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        if spec.name == "perf_one":
            assert held[0]() is None, "the failed try's tensors are still alive"
        return rebuild(self, spec, seed)

    monkeypatch.setattr(candidate_mode.CaseInputs, "_rebuild", half_built)
    events, _ = _candidate(tmp_path, out, cases, (LEAN / "scale_honest.py").read_text())
    assert not [e for e in events if e["ev"] == "error"], events
    assert held and held[0]() is None


def test_prefetching_does_not_wait_for_memory(tmp_path, monkeypatch):
    """Prefetching inputs ahead of the slot is opportunistic: out of memory, it tries once and
    leaves the case to be built when asked (where the worker waits)."""
    out, cases = _reference(tmp_path, PLAIN)
    tries = _never_enough_memory(monkeypatch)
    monkeypatch.setattr(candidate_mode, "_gpu_has_room", lambda device, nbytes: True)
    inputs = candidate_mode.CaseInputs({"task_dir": str(tmp_path / "task"), "entry": "scale"}, "cpu")
    ev = cases["perf_one"]
    case = {"name": "perf_one", "tier": "full", "call": ev["call"], "digest": ev["digest"],
            "case_seed": ev["case_seed"]}
    assert inputs.prefetch([case], 1 << 30) == 0
    assert tries == ["perf_one"] and not inputs.ready
    with pytest.raises(candidate_mode.InputsOutOfMemory):
        inputs.get(case)
    assert tries.count("perf_one") == 1 + 3


def test_a_generator_that_raises_names_its_error(tmp_path, monkeypatch):
    """Another failure of the task's generator in the candidate's process fails the case as a
    runtime error whose message carries that failure (not only "came out different")."""
    out, cases = _reference(tmp_path, PLAIN)

    def broken(self, spec, seed):
        raise ValueError("generator broke: seed 12")

    monkeypatch.setattr(candidate_mode.CaseInputs, "_rebuild", broken)
    events, _ = _candidate(tmp_path, out, cases, (LEAN / "scale_honest.py").read_text())
    errors = [e for e in events if e["ev"] == "error"]
    assert len(errors) == 1 and errors[0]["kind"] == "runtime_error"
    assert "ValueError: generator broke: seed 12" in errors[0]["message"]


E2E_REFERENCE = textwrap.dedent('''
    from kbx_worker.casegen import Case

    def scale(x, factor):
        return x * factor

    def cases():
        return [Case("small_one", "small", lambda c: ((c.randn(8), 2.0), {})),
                Case("perf_one", "full", lambda c: ((c.randn(4096), 3.0), {}))]
''')

# candidate of tests/adversarial/verdict/lean_inputs -> its status through kbx eval
E2E_CANDIDATES = {"honest": "passed", "mutates_full": "input_mutation", "fakes_oom": "oom",
                  "fakes_cublas_alloc": "oom", "fakes_cudnn_internal": "runtime_error",
                  "fakes_cusolver_handle": "runtime_error"}


def test_kbx_eval_judges_full_cases_without_inputs_files(kbx, tmp_path):
    """Through `kbx eval --tiers edge,small,full` on the CPU: the work folder holds no inputs
    file for the full case (lean), the honest candidate passes, and a candidate that changes its
    input only in that case is still caught."""
    suite, cands = tmp_path / "suite", tmp_path / "cands" / "Math"
    cands.mkdir(parents=True)
    for name in E2E_CANDIDATES:
        task = suite / "Math" / f"scale_{name}"
        task.mkdir(parents=True)
        (task / "task.toml").write_text(SCALE_TOML.format(name=f"scale_{name}"))
        (task / "reference.py").write_text(E2E_REFERENCE)
        (cands / f"scale_{name}.py").write_text((LEAN / f"scale_{name}.py").read_text())
    db, work = tmp_path / "lean.db", tmp_path / "work"
    proc = kbx("--suite", str(suite), "eval", "--method", "lean", "--candidates",
               str(tmp_path / "cands"), "--device", "cpu", "--track", "any", "--tiers",
               "edge,small,full", "--db", str(db), "--work", str(work), "--keep-files")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = kbx("--suite", str(suite), "results", "--db", str(db), "--format", "json", check=True)

    got = {r["task"]: r["status"] for r in json.loads(res.stdout)["results"]}
    assert got == {f"Math/scale_{n}": want for n, want in E2E_CANDIDATES.items()}, proc.stdout
    inputs = {p.name for p in work.rglob("*.in.kbt")}
    assert "small_one.in.kbt" in inputs and "perf_one.in.kbt" not in inputs
    # the oom came from the lanes first and stood only once the job had run again alone
    with sqlite3.connect(db) as con:
        outcomes = [o for (o,) in con.execute(
            "SELECT a.outcome FROM attempts a JOIN candidates c ON c.id = a.candidate_id "
            "WHERE c.task = 'Math/scale_fakes_oom' ORDER BY a.id")]
    assert outcomes == ["oom_beside", "oom"]
    # a GPU library's words for the same (session 35): again alone, then the verdict stands
    with sqlite3.connect(db) as con:
        for name, last in (("fakes_cublas_alloc", "oom"), ("fakes_cudnn_internal", "runtime_error"),
                           ("fakes_cusolver_handle", "runtime_error")):
            got = [o for (o,) in con.execute(
                "SELECT a.outcome FROM attempts a JOIN candidates c ON c.id = a.candidate_id "
                "WHERE c.task = ? ORDER BY a.id", (f"Math/scale_{name}",))]
            assert got == ["oom_beside", last], (name, got)
    assert ("Math/scale_fakes_oom: out of the GPU's memory beside other jobs; it runs again alone"
            in proc.stderr), proc.stderr  # said, not only recorded
    assert "4 jobs ran again alone (oom_beside 4)" in proc.stderr  # and summed up at the end
    assert any(p.name == "perf_one.ref.kbt" for p in work.rglob("*.ref.kbt"))


@pytest.mark.parametrize("life", ["chunk", "lane"])
def test_parked_jobs_run_alone_once_as_many_tasks_as_lanes_hold_their_files(kbx, tmp_path, life):
    """A parked job keeps its task's files until it runs again alone: with --jobs 2, two parked
    tasks make them run alone before the next job (session 31: a run whose every job was parked
    filled /dev/shm with their files). Every job still ends with its own verdict. Also with the
    reference workers kept across chunks of one task (--reference-worker-life lane), where a
    worker waiting for its next chunk must not hold up the alone jobs, nor they it."""
    suite, cands = tmp_path / "suite", tmp_path / "cands" / "Math"
    cands.mkdir(parents=True)
    names = {f"a_oom{i}": "fakes_oom" for i in range(4)} | {f"z_ok{i}": "honest" for i in range(2)}
    for name, kind in names.items():
        task = suite / "Math" / f"scale_{name}"
        task.mkdir(parents=True)
        (task / "task.toml").write_text(SCALE_TOML.format(name=f"scale_{name}"))
        (task / "reference.py").write_text(E2E_REFERENCE)
        (cands / f"scale_{name}.py").write_text((LEAN / f"scale_{kind}.py").read_text())
    db = tmp_path / "parked.db"
    proc = kbx("--suite", str(suite), "eval", "--method", "parked", "--candidates",
               str(tmp_path / "cands"), "--device", "cpu", "--track", "any", "--tiers",
               "edge,small,full", "--db", str(db), "--jobs", "2",
               "--reference-worker-life", life,
               *(["--reference-chunk", "1"] if life == "lane" else []), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = kbx("--suite", str(suite), "results", "--db", str(db), "--format", "json", check=True)
    got = {r["task"]: r["status"] for r in json.loads(res.stdout)["results"]}
    assert got == {f"Math/scale_{n}": ("oom" if k == "fakes_oom" else "passed")
                   for n, k in names.items()}, proc.stdout
    with sqlite3.connect(db) as con:
        attempts = con.execute(
            "SELECT a.id, c.task, a.outcome FROM attempts a JOIN candidates c "
            "ON c.id = a.candidate_id ORDER BY a.id").fetchall()
    for name, kind in names.items():
        mine = [o for _, t, o in attempts if t == f"Math/scale_{name}"]
        assert mine == (["oom_beside", "oom"] if kind == "fakes_oom" else ["passed"]), attempts
    # the first parked jobs ran alone before the last tasks' jobs began, not after the lanes
    first_alone = min(i for i, _, o in attempts if o == "oom")
    last_oom_start = max(i for i, t, o in attempts if o == "oom_beside")
    assert first_alone < last_oom_start, attempts
    assert "4 jobs ran again alone (oom_beside 4)" in proc.stderr, proc.stderr


def test_a_call_of_scalars_only_keeps_its_empty_file_and_its_candidate_runs(tmp_path):
    """Session 20 on the H200: Random/logspace's full cases have no tensor inputs; with no file
    kept, the candidate's worker (which rebuilt only for non-empty checksums) found none and
    failed an honest candidate."""
    out, cases = run_reference(tmp_path, SCALARS_ONLY, "T/ramp", "ramp", ["full"],
                               lean_inputs=True)
    assert cases["perf_one"]["in_file"] is True and "perf_one.in.kbt" in os.listdir(out)
    ev = dict(cases["perf_one"], in_file=False)  # as if none were kept: rebuilt, empty
    job = tmp_path / "job"
    job.mkdir()
    (job / "ramp.py").write_text(
        "import torch\n\ndef ramp(start, end, steps):\n    return torch.linspace(start, end, steps)\n")
    events = Events()
    candidate_mode.run({"mode": "candidate", "device": "cpu", "candidate": str(job / "ramp.py"),
                        "entry": "ramp", "task_dir": str(tmp_path / "task"), "track": "any",
                        "cases": [{"name": "perf_one", "tier": "full", "call": ev["call"],
                                   "out_prefix": str(job / "perf_one"), "digest": ev["digest"],
                                   "case_seed": ev["case_seed"]}], "time": False}, events)
    assert not [e for e in events.events if e["ev"] == "error"], events.events
    done = [e for e in events.events if e["ev"] == "case"]
    assert len(done) == 1 and done[0]["inputs_from"] == "rebuilt"
