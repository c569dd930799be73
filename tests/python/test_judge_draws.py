"""The judge's reading of a candidate's random draws: a file never makes kbx allocate more than
it holds, and a second draw whose tensors differ in name, dtype or shape from the first (which
passed kbx's comparison) fails the contract before the judge reads it (tests/adversarial/verdict/
random_second_draw is the whole attack, end to end, in test_random.py)."""
import struct

import pytest
import torch

from standins import Events
from kbx_worker import judge_mode, tensorio


def _giant(path, name="out"):
    """A file whose one float32 tensor declares 2**40 elements and holds none."""
    nb, dn = name.encode(), b"float32"
    path.write_bytes(tensorio.MAGIC + struct.pack("<I", 1) + struct.pack("<H", len(nb)) + nb
                     + struct.pack("<H", len(dn)) + dn + struct.pack("<B", 1)
                     + struct.pack("<q", 1 << 40) + struct.pack("<Q", 4 << 40))


def test_a_header_declaring_more_than_the_file_holds_is_refused_before_any_allocation(tmp_path):
    path = tmp_path / "giant.kbt"
    _giant(path)
    for read in (tensorio.read_kbt, tensorio.read_kbt_header):
        with pytest.raises(ValueError, match="truncated tensor out"):
            read(path)


def test_a_size_that_disagrees_with_the_shape_is_refused(tmp_path):
    path = tmp_path / "odd.kbt"
    tensorio.write_kbt(path, {"out": torch.zeros(4)})
    raw = bytearray(path.read_bytes())
    raw[-16 - 8:-16] = struct.pack("<Q", 8)  # 8 bytes declared for 4 float32 (16 bytes)
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="8 bytes for shape"):
        tensorio.read_kbt(path)


def test_headers_are_read_without_the_data(tmp_path):
    path = tmp_path / "two.kbt"
    tensorio.write_kbt(path, {"a": torch.zeros(2, 3), "b": torch.ones(5, dtype=torch.int64)})
    assert tensorio.read_kbt_header(path) == {"a": (torch.float32, (2, 3)),
                                              "b": (torch.int64, (5,))}


def _judge(tmp_path, out_b):
    inputs, out_a = tmp_path / "in.kbt", tmp_path / "a.kbt"
    tensorio.write_kbt(inputs, {"arg0": torch.ones(8)})
    tensorio.write_kbt(out_a, {"out": torch.ones(8)})
    task = tmp_path / "task"
    task.mkdir()
    (task / "reference.py").write_text(
        "def entry(x):\n    return x\n\n\ndef cases():\n    return []\n\n\n"
        "def judge(args, kwargs, out_a, out_b):\n    return {'ok': True}\n")
    events = Events()
    judge_mode.run({"device": "cpu", "jobs": [{
        "case": "c", "task_dir": str(task), "entry": "entry", "inputs": str(inputs),
        "call": {"args": [{"__tensor__": "arg0"}], "kwargs": {}}, "structure": "single",
        "out_a": str(out_a), "out_b": str(out_b)}]}, events)
    return [e for e in events.events if e["ev"] == "judged"]


def test_a_second_draw_of_another_shape_fails_before_the_judge(tmp_path):
    out_b = tmp_path / "b.kbt"
    tensorio.write_kbt(out_b, {"out": torch.ones(9)})
    (judged,) = _judge(tmp_path, out_b)
    assert judged["ok"] is False and "differ from the first's" in judged["message"]
    assert not judged.get("oom")


def test_a_second_draw_like_the_first_reaches_the_judge(tmp_path):
    out_b = tmp_path / "b.kbt"
    tensorio.write_kbt(out_b, {"out": torch.zeros(8)})
    (judged,) = _judge(tmp_path, out_b)
    assert judged["ok"] is True, judged


def test_a_giant_second_draw_is_the_candidates_failure_not_an_oom(tmp_path):
    out_b = tmp_path / "b.kbt"
    _giant(out_b)
    (judged,) = _judge(tmp_path, out_b)
    assert judged["ok"] is False and "truncated tensor" in judged["message"]
    assert judged["oom"] is False
