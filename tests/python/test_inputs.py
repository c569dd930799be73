"""The candidate's worker rebuilds a case's inputs only when they match the reference's
checksums bit for bit; otherwise it reads the reference's inputs file."""

import torch

from conftest import ROOT
from kbx_worker import tensorio
from kbx_worker.argcodec import encode_call
from kbx_worker.candidate_mode import CaseInputs
from kbx_worker.casegen import Ctx
from kbx_worker.taskload import Reference

TASK = ROOT / "tasks" / "Math" / "add"


def _reference_case(tmp_path):
    ref = Reference(str(TASK), "add", label="test_inputs")
    case = next(c for c in ref.cases if c.tier == "small")
    seed = 1234567
    args, kwargs = case.make(Ctx(seed, "cpu"))
    call, tensors = encode_call(list(args), kwargs)
    path = tmp_path / f"{case.name}.in.kbt"
    tensorio.write_kbt(str(path), tensors)
    return {"name": case.name, "inputs": str(path), "call": call, "case_seed": seed,
            "digest": tensorio.digest(tensors)}, tensors


def _inputs():
    return CaseInputs({"task_dir": str(TASK), "entry": "add"}, "cpu")


def test_rebuilt_inputs_are_the_reference_inputs(tmp_path):
    case, original = _reference_case(tmp_path)
    tensors, how = _inputs().get(case)
    assert how == "rebuilt"
    assert tensors.keys() == original.keys()
    for k in original:
        assert torch.equal(tensors[k].view(-1).view(torch.uint8), original[k].view(-1).view(torch.uint8))


def test_checksum_mismatch_reads_the_file(tmp_path):
    case, original = _reference_case(tmp_path)
    case["case_seed"] += 1  # rebuilds other values: their checksum cannot match
    tensors, how = _inputs().get(case)
    assert how == "file"
    for k in original:
        assert torch.equal(tensors[k], original[k])


def test_without_a_task_dir_the_file_is_read(tmp_path):
    case, _ = _reference_case(tmp_path)
    tensors, how = CaseInputs({}, "cpu").get(case)
    assert how == "file"


def test_checksum_sees_one_flipped_bit_and_position():
    t = torch.arange(1000, dtype=torch.float32)
    d = tensorio.digest({"x": t})["x"]
    flipped = t.clone()
    flipped.view(torch.int32)[517] ^= 1
    assert tensorio.digest({"x": flipped})["x"] != d
    swapped = t.clone()
    swapped[[3, 4]] = swapped[[4, 3]]
    assert tensorio.digest({"x": swapped})["x"] != d
    odd = torch.arange(7, dtype=torch.uint8)  # bytes past the last whole word count too
    odd2 = odd.clone()
    odd2[6] = 99
    assert tensorio.digest({"x": odd})["x"] != tensorio.digest({"x": odd2})["x"]
