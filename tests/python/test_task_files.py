"""A reference worker's deferred case files (tensorio.DeferredFiles): flush() writes every
pending file, several at once, each exactly as write_kbt alone would have."""
import torch

from kbx_worker import tensorio


def test_flush_writes_every_pending_file_as_alone(tmp_path):
    files = tensorio.DeferredFiles()
    files.defer = True
    expected = {}
    for k in range(7):  # more files than writer threads
        named = {"x": torch.arange(1000 * (k + 1), dtype=torch.float32) * (k + 1),
                 "y": torch.full((3, k + 1), k, dtype=torch.int64)}
        expected[k] = {name: t.clone() for name, t in named.items()}
        files.write(str(tmp_path / f"c{k}.kbt"), named)
    assert len(files.pending) == 7 and not list(tmp_path.iterdir())  # nothing written yet
    files.flush()
    assert files.pending == [] and files.pending_bytes == 0
    for k, named in expected.items():
        got = tensorio.read_kbt(str(tmp_path / f"c{k}.kbt"))
        assert list(got) == ["x", "y"]
        for name, t in named.items():
            assert torch.equal(got[name], t), (k, name)
        tensorio.write_kbt(str(tmp_path / f"alone{k}.kbt"), named)
        assert (tmp_path / f"alone{k}.kbt").read_bytes() == (tmp_path / f"c{k}.kbt").read_bytes()


def test_a_failed_write_is_raised(tmp_path):
    files = tensorio.DeferredFiles()
    files.defer = True
    files.write(str(tmp_path / "ok.kbt"), {"x": torch.ones(4)})
    files.write(str(tmp_path / "missing" / "bad.kbt"), {"x": torch.ones(4)})
    try:
        files.flush()
    except FileNotFoundError:
        pass
    else:
        raise AssertionError("a write into a missing folder did not raise")
