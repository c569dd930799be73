"""Shadows of float16 and bfloat16 results are stored as float32 (half the bytes of the
references' largest files); any other shadow stays float64, and so does one whose values would
not all stay finite in float32. The verdict over them: tests/python/test_task_files.py and the
suite's CPU self-check judge every half-precision task's reference against such shadows."""

import textwrap

import torch

from standins import Events
from kbx_worker import reference_mode
from kbx_worker.calls import narrow_shadow
from kbx_worker.tensorio import read_kbt


def test_only_the_shadows_of_half_precision_results_narrow():
    s = torch.randn(16, dtype=torch.float64)
    got = narrow_shadow({"a": s, "b": s, "c": s, "d": s.to(torch.float32)},
                        {"a": torch.float16, "b": torch.bfloat16, "c": torch.float32,
                         "d": torch.float16})
    assert got["a"].dtype == torch.float32 and got["b"].dtype == torch.float32
    assert torch.equal(got["a"], s.to(torch.float32))
    assert got["c"].dtype == torch.float64  # a float32 result's shadow keeps float64
    assert got["d"] is not None and got["d"].dtype == torch.float32  # not a float64 shadow: as is


def test_a_shadow_that_overflows_float32_stays_float64():
    # bfloat16's largest finite value is within float32's range, a float64 shadow need not be
    s = torch.tensor([1.0, 3.5e38, float("inf"), float("nan")], dtype=torch.float64)
    assert narrow_shadow({"a": s}, {"a": torch.bfloat16})["a"].dtype == torch.float64
    # non-finite values that are non-finite already do not keep it from narrowing
    s2 = torch.tensor([1.0, float("inf"), float("nan")], dtype=torch.float64)
    assert narrow_shadow({"a": s2}, {"a": torch.bfloat16})["a"].dtype == torch.float32


REFERENCE = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def halve(x, out=None):
        y = torch.sigmoid(x)
        if out is not None:
            out.copy_(y)
            return out
        return y

    def cases():
        return [Case("f16", "small", lambda c: ((c.randn(64, dtype=torch.float16),), {})),
                Case("f32", "small", lambda c: ((c.randn(64),), {})),
                Case("bf16_out", "small", lambda c: ((c.randn(64, dtype=torch.bfloat16),),
                                                    {"out": torch.empty(64, dtype=torch.bfloat16)}))]
''')


def test_the_reference_worker_writes_float32_shadows_for_half_results(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "reference.py").write_text(REFERENCE)
    out = tmp_path / "ref"
    reference_mode.run({"device": "cpu", "jobs": [{
        "task": "T/halve", "task_dir": str(task), "entry": "halve", "seed": 5, "label": "x",
        "tiers": ["small"], "out_dir": str(out)}]}, Events())
    f16 = read_kbt(str(out / "f16.shadow.kbt"))
    assert [t.dtype for t in f16.values()] == [torch.float32]
    ref16 = next(iter(read_kbt(str(out / "f16.ref.kbt")).values()))
    x = next(iter(read_kbt(str(out / "f16.in.kbt")).values()))
    want = torch.sigmoid(x.to(torch.float64)).to(torch.float32)
    assert torch.equal(next(iter(f16.values())), want) and ref16.dtype == torch.float16
    f32 = read_kbt(str(out / "f32.shadow.kbt"))
    assert [t.dtype for t in f32.values()] == [torch.float64]
    # an out= result is the updated input: its shadow travels in shadow_after, narrowed too
    after = read_kbt(str(out / "bf16_out.shadow_after.kbt"))
    assert after and all(t.dtype == torch.float32 for t in after.values())
