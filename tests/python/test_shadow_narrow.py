"""Shadows of float16 and bfloat16 results are stored as float32, those of float32 results as
their float32 difference from the reference (half the bytes of the references' largest files,
float64 shadows); one whose values would not stay finite stays float64. The verdict over them: tests/python/test_task_files.py and the
suite's CPU self-check judge every half-precision task's reference against such shadows."""

import textwrap

import torch

from standins import run_reference
from kbx_worker.calls import narrow_shadow, shadow_minus_ref
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


def test_a_float32_results_shadow_is_stored_as_its_difference_from_the_reference():
    s = torch.randn(1000, dtype=torch.float64)
    r = s.to(torch.float32)
    got, names = shadow_minus_ref({"a": s, "b": s, "c": s[:10]},
                                  {"a": r, "b": r.to(torch.float16), "c": r})
    assert names == ["a"] and got["a"].dtype == torch.float32
    # back to within 2^-24 of PyTorch's own error (and double's rounding of the sum)
    gap = (got["a"].double() + r.double() - s).abs()
    assert bool((gap <= 2.0**-24 * (s - r.double()).abs() + 2.0**-52 * s.abs()).all())
    assert got["b"].dtype == torch.float64 and got["c"].dtype == torch.float64  # other dtype, shape
    # non-finite anywhere: as it is
    s2, r2 = s.clone(), r.clone()
    s2[3], r2[3] = float("inf"), float("inf")
    got, names = shadow_minus_ref({"a": s2}, {"a": r2})
    assert names == [] and got["a"].dtype == torch.float64
    # a difference in float32's subnormal range (results near 1e-38): as it is
    s3 = torch.tensor([1e-38 + 3e-46, 1.0], dtype=torch.float64)
    got, names = shadow_minus_ref({"a": s3}, {"a": s3.to(torch.float32)})
    assert names == [] and got["a"].dtype == torch.float64


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
                                                    {"out": torch.empty(64, dtype=torch.bfloat16)})),
                Case("f32_out", "small", lambda c: ((c.randn(64),), {"out": torch.empty(64)}))]
''')


def test_the_reference_worker_writes_compact_shadows_and_says_which_are_differences(tmp_path):
    out, cases = run_reference(tmp_path, REFERENCE, "T/halve", "halve", ["small"])
    f16 = read_kbt(str(out / "f16.shadow.kbt"))
    assert [t.dtype for t in f16.values()] == [torch.float32]
    ref16 = next(iter(read_kbt(str(out / "f16.ref.kbt")).values()))
    x = next(iter(read_kbt(str(out / "f16.in.kbt")).values()))
    want = torch.sigmoid(x.to(torch.float64)).to(torch.float32)
    assert torch.equal(next(iter(f16.values())), want) and ref16.dtype == torch.float16
    f32 = read_kbt(str(out / "f32.shadow.kbt"))["out"]
    ref32 = read_kbt(str(out / "f32.ref.kbt"))["out"]
    x32 = read_kbt(str(out / "f32.in.kbt"))
    assert f32.dtype == torch.float32 and cases["f32"]["shadow_minus_ref"] == ["out"]
    exact = torch.sigmoid(next(iter(x32.values())).double())
    assert torch.allclose(f32.double() + ref32.double(), exact, rtol=1e-12, atol=0)
    assert cases["f16"]["shadow_minus_ref"] == []  # narrowed, not a difference
    # an out= result is the updated input: its shadow travels in shadow_after, narrowed too
    after = read_kbt(str(out / "bf16_out.shadow_after.kbt"))
    assert after and all(t.dtype == torch.float32 for t in after.values())
    # a float32 out=: a difference in shadow_after, and the output that is that input says so
    after32 = read_kbt(str(out / "f32_out.shadow_after.kbt"))
    assert list(after32) == cases["f32_out"]["shadow_after_minus_ref"] and after32
    assert cases["f32_out"]["shadow_minus_ref"] == ["out"]
