"""A 0-d result under the shadow rule is judged against a floor of a few ulps of its own value,
so a reduction case whose terms cancel makes an honest kernel's normal rounding look like a
mismatch (matmul's dot_1d_f32 on randn vectors failed the expert at strict on about 3% of
seeds). Such a case must not cancel: its result is of the order of its terms' sum."""
import pathlib

import torch

from kbx_worker.casegen import Ctx, case_seed
from kbx_worker.taskload import Reference

TASK = pathlib.Path(__file__).resolve().parents[2] / "tasks" / "MatrixMultiply" / "matmul"


def test_matmul_dot_case_does_not_cancel_at_any_seed():
    ref = Reference(str(TASK), "matmul", label="test_scalar_cases")
    case = next(c for c in ref.cases if c.name == "dot_1d_f32")
    for seed in range(200):
        (a, b), _ = case.make(Ctx(case_seed(seed, "MatrixMultiply/matmul", case.name), "cpu"))
        terms = (a.double() * b.double())
        assert terms.sum().abs() >= 0.5 * terms.abs().sum(), seed
