"""calls.same_bits tells which inputs a call updated, bit for bit, whatever the inputs' layout:
a column of a matrix or an expanded scalar (1-D views whose stride is not 1) once made it raise,
which ended the worker as the candidate's crash (reference and candidate workers alike)."""

import math

import pytest
import torch

from kbx_worker.calls import same_bits

LAYOUTS = {
    "contiguous": lambda: torch.randn(6, 4),
    "column": lambda: torch.randn(6, 4)[:, 1],
    "every_other": lambda: torch.randn(12)[::2],
    "expanded_scalar": lambda: torch.randn(1).expand(5),
    "expanded_rows": lambda: torch.randn(3, 1).expand(3, 4),
    "transposed": lambda: torch.randn(4, 6).t(),
    "zero_dim": lambda: torch.tensor(2.5),
    "bool_column": lambda: (torch.randn(5, 3) > 0)[:, 0],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_tensor_is_the_same_as_its_copy(layout):
    t = LAYOUTS[layout]()
    assert same_bits(t.clone(), t) and same_bits(t, t.clone())


@pytest.mark.parametrize("layout", ["column", "every_other", "transposed", "contiguous"])
def test_a_changed_element_is_seen(layout):
    t = LAYOUTS[layout]()
    before = t.clone()
    t[(0,) * t.dim()] += 1
    assert not same_bits(before, t)


def test_nan_payloads_and_signed_zeros_count():
    a = torch.tensor([float("nan"), 0.0])
    b = a.clone()
    b[1] = -0.0
    assert not same_bits(a, b)
    assert same_bits(a, a.clone()) and math.isnan(a[0].item())


# A task whose inputs are a matrix's column (stride 4) and an expanded scalar (stride 0), as a
# generator may well make them: the reference's worker and an honest candidate's both judge it.
STRIDED_REFERENCE = """
import torch
from kbx_worker.casegen import Case

def scale(x, factor):
    return x * factor

def cases():
    return [Case("small_column", "small", lambda c: ((c.randn(8, 4)[:, 1], 2.0), {})),
            Case("small_expanded", "small", lambda c: ((c.randn(1).expand(6), 3.0), {}))]
"""


def test_strided_inputs_are_judged_by_both_workers(tmp_path):
    from standins import run_candidate, run_reference

    out, cases = run_reference(tmp_path, STRIDED_REFERENCE, "T/scale", "scale", ["small"])
    assert set(cases) == {"small_column", "small_expanded"}
    events, _ = run_candidate(tmp_path, out, cases, "def scale(x, factor):\n    return x * factor\n")
    assert not [e for e in events if e["ev"] == "error"], events
    assert {e["case"] for e in events if e["ev"] == "case"} == set(cases)
