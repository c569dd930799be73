"""A small result's sensitivity (python/kbx_worker/sensitivity.py): how far its float64 value
moves when the inputs move by a rounding, the floor of the judge's allowance where PyTorch's own
error is one lucky sample. Math/add's zero-dim case, seed 3950: x + 3y with x near -3y, exact in
PyTorch's fused multiply-add, 5.96e-8 off in a kernel that multiplies, then adds (an error ratio of
98.9 without the floor; CI's failure of 2026-12-03)."""

import csv
import io
import math
import textwrap

import numpy as np
import pytest
import torch

from conftest import ROOT
from standins import run_reference
from kbx_worker import sensitivity
from kbx_worker.casegen import Ctx, case_seed

VERDICT = ROOT / "tests" / "adversarial" / "verdict"
SEED = "3950"


def _add_inputs(seed=SEED):
    ctx = Ctx(case_seed(seed, "Math/add", "zero_dim_f32"), "cpu")
    return ctx.randn(()), ctx.randn(())


def test_the_seed_is_one_where_the_order_of_rounding_matters():
    # a fused multiply-add rounds x + 3y once (PyTorch's CPU kernel does, on this machine); a
    # kernel that multiplies, then adds, rounds 3y first: 5.96e-8 apart, with x + 3y = 1.26e-3
    a, b = _add_inputs()
    exact = a.item() + 3.0 * b.item()  # float64 holds it exactly
    fused = float(np.float32(exact))
    unfused = float(np.float32(a.item()) + np.float32(3) * np.float32(b.item()))
    assert fused == exact and abs(unfused - exact) == pytest.approx(5.96e-8, rel=1e-2)


def _measure(a, b, seed=7):
    pristine = sensitivity.cpu_copy(((a, b), {"alpha": 3}))
    inputs, result = {"arg0": a, "arg1": b}, torch.add(a, b, alpha=3)
    return sensitivity.measure(torch.add, pristine, inputs, seed, result, []), pristine


def test_the_floor_covers_the_unfused_rounding_and_repeats():
    a, b = _add_inputs()
    (results, updated), pristine = _measure(a, b)
    unfused = float(np.float32(a.item()) + np.float32(3) * np.float32(b.item()))
    err = abs(unfused - (a.item() + 3.0 * b.item()))
    floor = results["out"]["inf"]
    assert updated == {}
    # within the judge's ten times the floor, by a margin; and no larger than a few roundings of
    # the operands (|x| + 3|y| = 3.25: 2^-24 of that is 1.9e-7)
    assert err < 3 * floor < 3 * 4 * 3.25 * 2.0 ** -24
    assert results["out"]["l2"] == pytest.approx(floor / abs(a.item() + 3 * b.item()))
    # the terms: the same call on |x| and |y|, |x| + 3|y|; the floor is the smaller, the movement
    assert results["out"]["terms"] == pytest.approx(abs(a.item()) + 3 * abs(b.item()))
    assert floor == results["out"]["moved"]
    assert _measure(a, b)[0] == (results, updated)  # the same seed, the same floor
    assert pristine[0][0].item() == a.item()  # the perturbed copies are copies


def test_the_floors_calls_run_on_one_cpu_thread_and_the_pool_is_put_back():
    # torch's pool made these small float64 calls 100x slower (session 22 on the H200: the floor
    # took 557 s of the references' 1066 s); the case's own calls keep every thread
    threads_seen = []

    def add(*args, **kwargs):
        threads_seen.append(torch.get_num_threads())
        return torch.add(*args, **kwargs)

    a, b = _add_inputs()
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        pristine = sensitivity.cpu_copy(((a, b), {"alpha": 3}))
        sensitivity.measure(add, pristine, {"arg0": a, "arg1": b}, 7, torch.add(a, b, alpha=3), [])
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert threads_seen and set(threads_seen) == {1}


def test_float64_inputs_do_not_move():
    # a rounding of a float64 input is below what the float64 shadow resolves: no floor
    a, b = (t.double() for t in _add_inputs())
    assert not sensitivity.wanted(torch.zeros(()), {"arg0": a, "arg1": b}, [], {})
    (results, _), _ = _measure(a, b)
    assert results == {}


def test_a_float64_result_of_float32_inputs_gets_no_floor():
    # computed in float64 (Fusion/fused_exp_mean's cases): a float32 rounding is far too loose
    x = torch.rand(16)
    assert not sensitivity.wanted(x.double().exp().mean(), {"arg0": x}, [], {})


def _both(f, *args):
    pristine = sensitivity.cpu_copy((args, {}))
    inputs = {f"arg{i}": a for i, a in enumerate(args)}
    results, _ = sensitivity.measure(f, pristine, inputs, 11, f(*args), [])
    return results["out"]


def test_where_an_honest_kernel_is_exact_the_terms_keep_the_floor_down():
    # the distance of identical inputs and cos near a multiple of pi move far when the inputs
    # move, but an honest kernel never moves them: there the terms are the result's own size
    ulps = 4 * 2.0 ** -23  # the judge's floor from the terms: 4 float32 ulps of them
    x = torch.linspace(-3, 3, 8)
    got = _both(lambda a, b: torch.nn.functional.pairwise_distance(a, b), x, x.clone())
    assert got["terms"] == pytest.approx(8 ** 0.5 * 1e-6)  # |x - x + eps|, as the result
    assert got["moved"] > 1000 * ulps * got["terms"]
    assert got["inf"] == pytest.approx(ulps * got["terms"])  # the floor: a few ulps of itself
    x = torch.tensor([1000.5 * 3.141592653589793])  # cos near 0, its slope near 1
    got = _both(torch.cos, x)
    assert got["terms"] == pytest.approx(abs(torch.cos(x.double()).item()))
    assert got["moved"] > 1e-5 > 1000 * ulps * got["terms"]
    assert got["inf"] == pytest.approx(ulps * got["terms"])


def test_a_jump_counts_no_more_than_the_terms():
    # round at a tie jumps under a perturbation; the terms, round(|2.5|) = 2, bound the floor to a
    # few float32 ulps of 2 in the judge
    got = _both(torch.round, torch.tensor([2.5]))
    assert got["terms"] == 2.0 and got["inf"] <= 4 * 2.0 ** -23 * 2.0


def test_each_element_takes_the_smaller_of_its_own_two_measures():
    # exp(x/2) at 170 moves 85 roundings (its terms are itself); at -180 its terms are exp(90)
    # (the absolute value flips the sign) but it barely moves. The smaller of the two largest
    # would be 85 roundings of exp(85), ten times the ulp floor; element by element it is the
    # ulp floor
    got = _both(lambda t: torch.exp(t / 2), torch.tensor([170.0, -180.0]))
    ulp_floor = 4 * 2.0 ** -23 * math.exp(85)
    assert got["inf"] == pytest.approx(ulp_floor)
    assert min(got["moved"], 4 * 2.0 ** -23 * got["terms"]) > 5 * ulp_floor


def test_a_call_that_rejects_the_absolute_values_has_no_terms():
    def picky(x):
        if bool((x >= 0).all()):
            raise ValueError("wants a negative element")
        return x.sum()

    got = _both(picky, torch.tensor([-1.0, 2.0]))
    assert got["moved"] > 0 and got["terms"] == 0 and got["inf"] == 0  # no floor


def test_only_small_results_want_the_floor():
    small, large = torch.zeros(sensitivity.MAX_ELEMENTS), torch.zeros(sensitivity.MAX_ELEMENTS + 1)
    x = {"arg0": torch.zeros(1)}
    assert sensitivity.wanted(small, x, [], {}) and not sensitivity.wanted(large, x, [], {})
    assert not sensitivity.wanted(torch.zeros(4, dtype=torch.int64), x, [], {})  # judged exactly
    assert not sensitivity.wanted(small, {}, [], {})  # nothing to move
    # an updated input counts with the result
    assert not sensitivity.wanted(small, x, ["arg0"], {})
    # inputs too large to copy to the CPU (a full-size case), or a call that names a CUDA device
    huge = {"arg0": torch.empty(sensitivity.MAX_INPUT_ELEMENTS + 1)}
    assert not sensitivity.wanted(torch.zeros(()), huge, [], {})
    assert not sensitivity.wanted(small, x, [], {"kwargs": {"device": "cuda:0"}})


REFERENCE = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def axpy(x, y, alpha, out=None):
        if out is not None:
            return torch.add(x, y, alpha=alpha, out=out)
        return torch.add(x, y, alpha=alpha)

    def cases():
        return [
            Case("one", "small", lambda c: ((c.randn(()), c.randn(()), 3.0), {})),
            Case("special", "small", lambda c: ((c.special(), c.special(), 3.0), {})),
            Case("large", "small", lambda c: ((c.randn(5000), c.randn(5000), 3.0), {})),
            Case("into_out", "small",
                 lambda c: ((c.randn(3), c.randn(3), 3.0), {"out": c.randn(3)})),
            Case("full_one", "full", lambda c: ((c.randn(()), c.randn(()), 3.0), {})),
        ]
''')


def test_the_reference_event_carries_it_where_it_applies(tmp_path):
    _, events = run_reference(tmp_path, REFERENCE, "Math/axpy", "axpy", ["small", "full"],
                              fresh_twin=True)
    assert events["one"]["sensitivity"]["out"]["inf"] > 0
    # nor a full-size case or its fresh twin (their float64 CPU calls took 52 s of the 184
    # references' time on the H200, the most for spectral_norm_eig's eig: 12 s a case)
    assert "sensitivity" not in events["full_one"] and "shadow" in events["full_one"]
    assert "sensitivity" not in events["full_one__fresh"]
    assert events["one"]["sensitivity_after"] == {}
    assert "sensitivity" not in events["special"]  # special values set their own scale
    assert "sensitivity" not in events["large"]  # PyTorch's worst error over 5000 is steady
    # an out= argument: the result leaf and the updated input both have their floor
    into = events["into_out"]
    assert into["updated"] == ["kw.out"]
    assert into["sensitivity"]["out"]["inf"] > 0
    assert into["sensitivity_after"]["kw.out"]["inf"] == into["sensitivity"]["out"]["inf"]


def _statuses(kbx, tmp_path, candidates):
    db = tmp_path / "s.db"
    kbx("eval", "--method", "m", "--candidates", str(candidates), "--tasks", "Math/add",
        "--device", "cpu", "--seed", SEED, "--db", str(db), check=True)
    table = kbx("results", "--db", str(db), "--format", "csv", check=True).stdout
    (row,) = csv.DictReader(io.StringIO(table))
    return row["status"]


def test_an_honest_unfused_add_passes_at_that_seed(kbx, tmp_path):
    # failed as numerical_mismatch (zero_dim_f32, error ratio 98.9) before the floor
    assert _statuses(kbx, tmp_path, VERDICT / "add_broadcast_contiguous") == "passed"


def test_a_zero_dim_answer_off_by_more_than_a_rounding_still_fails(kbx, tmp_path):
    assert _statuses(kbx, tmp_path, VERDICT / "sensitivity_floor") == "numerical_mismatch"


def test_a_floor_that_cannot_be_measured_is_left_out_and_said(tmp_path, monkeypatch, capfd):
    # out of memory, say: the case is judged without the floor (stricter), and the event and the
    # worker's stderr say why
    def no_room(*args, **kwargs):
        raise RuntimeError("out of memory (stand-in)")

    monkeypatch.setattr(sensitivity, "measure", no_room)
    _, events = run_reference(tmp_path, REFERENCE, "Math/axpy", "axpy", ["small"])
    assert "sensitivity" not in events["one"]
    assert "out of memory" in events["one"]["sensitivity_error"]
    assert "Math/axpy one: judged without the small-result floor" in capfd.readouterr().err


DOMAIN = textwrap.dedent('''
    import torch
    from kbx_worker.casegen import Case

    def count(x):  # defined on zeros and ones only, as a probability of exactly 1 is at its edge
        if not bool(((x == 0) | (x == 1)).all()):
            raise ValueError("x must hold 0 and 1 only")
        return x.sum()

    def cases():
        ones = lambda c: torch.tensor([1.0, 0.0, 1.0], device=c.device)
        return [Case("edge", "small", lambda c: ((ones(c),), {}))]
''')


def test_a_moved_input_outside_the_references_domain_adds_nothing(tmp_path):
    # every moved call raises (on the CPU an exception; on CUDA a domain check can be a
    # device-side assert, which is why the floor's calls never run there): no movement, so no
    # floor, and no error either
    _, events = run_reference(tmp_path, DOMAIN, "Math/count", "count", ["small"])
    got = events["edge"]["sensitivity"]["out"]
    assert got["moved"] == 0 and got["terms"] == 2.0 and got["inf"] == 0
    assert "sensitivity_error" not in events["edge"]
