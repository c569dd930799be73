"""A reference that runs out of the GPU's memory beside other work is computed again alone, once
the rest of the run is done, before its task's jobs run; its reference_error stands only when it
fails alone too (session 29 on the H200: an honest reference's 32 GiB float64 shadow met the
108 GiB held by the jobs beside it, and its candidate got reference_error).

On the CPU the reference raises torch's OutOfMemoryError itself: the first time only (a marker
file), or every time."""
import json
import os
import pathlib
import textwrap

import pytest

from test_eval_options import _trace

TOML = '''schema = 1
name = "{name}"
category = "Math"
entry = "scale"
signature = "scale(x, factor)"
set = "extra"
summary = """Return x times factor, elementwise: x is a float32 tensor and factor a Python number.
The result has the shape and dtype of x."""

[contract]
dtypes = ["float32"]
'''

REFERENCE = textwrap.dedent('''
    import os
    import torch
    from kbx_worker.casegen import Case

    MARKER = {marker!r}
    ALWAYS = {always!r}

    def scale(x, factor):
        return x * factor

    def _inputs(c):
        if ALWAYS or not os.path.exists(MARKER):
            open(MARKER, "a").write("raised\\n")
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 32.00 GiB.")
        return (c.randn(8), 2.0), {{}}

    def cases():
        return [Case("small_one", "small", _inputs),
                Case("small_two", "small", lambda c: ((c.randn(16), 3.0), {{}}))]
''')

CANDIDATE = "def scale(x, factor):\n    return x * factor\n"


def _run(kbx, tmp_path, tasks, with_details=False):
    """tasks: {name: always}; runs them with a plain task beside, one lane; (statuses, trace,
    stderr, markers)."""
    suite, cands = tmp_path / "suite", tmp_path / "cands" / "Math"
    cands.mkdir(parents=True)
    markers = {}
    for name, always in {**tasks, "scale_plain": None}.items():
        task = suite / "Math" / name
        task.mkdir(parents=True)
        (task / "task.toml").write_text(TOML.format(name=name))
        marker = tmp_path / f"{name}.raised"
        markers[name] = marker
        source = REFERENCE.format(marker=str(marker), always=bool(always))
        if always is None:  # never raises: its marker exists from the start
            marker.write_text("")
        (task / "reference.py").write_text(source)
        (cands / f"{name}.py").write_text(CANDIDATE)
    db, trace = tmp_path / "k.db", tmp_path / "trace.txt"
    proc = kbx("--suite", str(suite), "eval", "--method", "m", "--candidates",
               str(tmp_path / "cands"), "--device", "cpu", "--track", "any", "--jobs", "1",
               "--db", str(db), env=dict(os.environ, KBX_SLOT_TRACE=str(trace)))
    res = kbx("--suite", str(suite), "results", "--db", str(db), "--format", "json", check=True)
    results = json.loads(res.stdout)["results"]
    statuses = {r["task"]: r["status"] for r in results}
    if with_details:
        return proc, statuses, _trace(trace), markers, {r["task"]: r.get("detail", "")
                                                         for r in results}
    return proc, statuses, _trace(trace), markers


def test_a_reference_out_of_gpu_memory_beside_others_runs_again_alone(kbx, tmp_path):
    proc, statuses, steps, markers = _run(kbx, tmp_path, {"scale_oom_once": False})
    assert proc.returncode == 0, proc.stderr
    assert statuses == {"Math/scale_oom_once": "passed", "Math/scale_plain": "passed"}, proc.stderr
    assert markers["scale_oom_once"].read_text() == "raised\n"  # raised once, then computed
    assert "Math/scale_oom_once: out of the GPU's memory beside other work" in proc.stderr
    mine = [step for step, who in steps if who == "Math/scale_oom_once"]
    assert mine.index("refs_deferred") < mine.index("fed") < mine.index("job_start"), mine
    # alone: its references were computed again only once the other task's job had ended
    plain_end = max(i for i, (step, who) in enumerate(steps)
                    if who == "Math/scale_plain" and step == "job_end")
    refed = [i for i, (step, who) in enumerate(steps) if who == "Math/scale_oom_once"
             and step == "fed"]
    assert refed and refed[0] > plain_end, steps


def test_references_put_off_run_alone_one_after_the_other_then_their_jobs_side_by_side(
        kbx, tmp_path):
    """Two references out of the GPU's memory beside other work: once nothing else is live, each
    is computed again by a worker of its own, the second right after the first (each alone: no
    job runs meanwhile), and their jobs go to the lanes together after both, instead of the
    second reference waiting for the first task's job (session 45: a 10.6 s tail on an H100)."""
    proc, statuses, steps, markers = _run(kbx, tmp_path, {"scale_oom_a": False,
                                                          "scale_oom_b": False})
    assert proc.returncode == 0, proc.stderr
    assert statuses == {"Math/scale_oom_a": "passed", "Math/scale_oom_b": "passed",
                        "Math/scale_plain": "passed"}, proc.stderr
    names = ("Math/scale_oom_a", "Math/scale_oom_b")
    for name in names:
        assert markers[name.split("/")[1]].read_text() == "raised\n"  # once, then computed
        assert ("refs_deferred", name) in steps, steps
    plain_end = steps.index(("job_end", "Math/scale_plain"))
    starts = [steps.index(("refs_start", name), plain_end) for name in names]
    dones = [steps.index(("refs_done", name), start) for name, start in zip(names, starts)]
    assert dones[0] < starts[1] or dones[1] < starts[0], steps  # one after the other
    assert not [s for s in steps[min(starts):max(dones)] if s[0] in ("job_start", "fed")], steps
    fed = [steps.index(("fed", name)) for name in names]
    assert min(fed) > max(dones), steps  # together, after both


def test_a_reference_out_of_gpu_memory_alone_too_is_a_reference_error(kbx, tmp_path):
    proc, statuses, _, markers, details = _run(kbx, tmp_path, {"scale_oom_always": True},
                                               with_details=True)
    assert statuses == {"Math/scale_oom_always": "reference_error",
                        "Math/scale_plain": "passed"}, proc.stderr
    # computed twice (beside, then alone), not more; the error says it failed alone
    assert markers["scale_oom_always"].read_text() == "raised\nraised\n"
    assert "with the GPU to itself" in details["Math/scale_oom_always"], details


@pytest.mark.parametrize("error,is_oom", [
    ("OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 GiB.", True),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate", True),
    ("RuntimeError: CUDA error: out of memory", True),
    ("GpuContended: another process's work shared the GPU while case perf's eager baseline "
     "was timed (it did not drain in 1 s)", True),
    ("GpuStarved: this worker's process found no room on the GPU for 6 allocation(s) by the end "
     "of case perf's timings, beside other work", True),
    ("RuntimeError: shape mismatch", False),
])
def test_only_gpu_memory_errors_are_computed_again(kbx, tmp_path, error, is_oom):
    """A GPU out-of-memory error or a baseline timed beside another process's GPU work is
    computed again alone; any other reference error stands at once (computed once)."""
    name = "scale_broken"
    suite, cands = tmp_path / "suite", tmp_path / "cands" / "Math"
    cands.mkdir(parents=True)
    (suite / "Math" / name).mkdir(parents=True)
    (suite / "Math" / name / "task.toml").write_text(TOML.format(name=name))
    marker = tmp_path / "raised"
    kind, _, message = error.partition(": ")
    raising = "torch.OutOfMemoryError" if kind == "OutOfMemoryError" else kind
    (suite / "Math" / name / "reference.py").write_text(textwrap.dedent(f'''
        import torch
        from kbx_worker.casegen import Case

        class GpuContended(RuntimeError):  # as kbx_worker.reference_mode's, by its name
            pass

        class GpuStarved(RuntimeError):  # the same
            pass

        def scale(x, factor):
            return x * factor

        def _inputs(c):
            open({str(marker)!r}, "a").write("raised\\n")
            raise {raising}({message!r})

        def cases():
            return [Case("small_one", "small", _inputs)]
    '''))
    (cands / f"{name}.py").write_text(CANDIDATE)
    db = tmp_path / "k.db"
    kbx("--suite", str(suite), "eval", "--method", "m", "--candidates", str(tmp_path / "cands"),
        "--device", "cpu", "--track", "any", "--db", str(db))
    res = kbx("--suite", str(suite), "results", "--db", str(db), "--format", "json", check=True)
    assert [r["status"] for r in json.loads(res.stdout)["results"]] == ["reference_error"]
    assert marker.read_text() == ("raised\n" * (2 if is_oom else 1))
