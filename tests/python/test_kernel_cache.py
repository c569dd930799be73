"""The reference workers' cache of the kernels PyTorch compiles at run time (--kernel-cache,
PYTORCH_KERNEL_CACHE_PATH): on a GPU, torch.special's airy_ai, zeta, polygamma... compile with
NVRTC at their first call in every process, 1-3 s a kernel and dtype on an H100
(bench/cuda_start_gpu.py), unless a cache folder has them. The references share kbx's own folder
across runs; a candidate never sees it (a kernel planted there would run in the references), and
kbx uses it only while candidates are confined."""

import json
import os
import textwrap

import pytest

from conftest import ROOT
from standins import SCALE_TOML

TASK = "Activation/relu"
ATTACK = ROOT / "tests" / "adversarial" / "sandbox" / "poison_kernel_cache" / f"{TASK}.py"


# a reference that notes which kernel cache its worker was given
REFERENCE = textwrap.dedent('''
    import os
    from kbx_worker.casegen import Case

    def scale(x, factor):
        with open({seen!r}, "a") as f:
            f.write(os.environ.get("PYTORCH_KERNEL_CACHE_PATH", "-") + "\\n")
        return x * factor

    def cases():
        return [Case("small_one", "small", lambda c: ((c.randn(8), 2.0), {{}}))]
''')

# an honest candidate, but for the kernel cache: it answers wrongly when it was given one
CANDIDATE = textwrap.dedent('''
    import os

    def scale(x, factor):
        if "PYTORCH_KERNEL_CACHE_PATH" in os.environ:
            return x * 0
        return x * factor
''')


def _suite(tmp_path):
    suite, cands = tmp_path / "suite", tmp_path / "cands"
    (suite / "Math" / "scale").mkdir(parents=True, exist_ok=True)
    (suite / "Math" / "scale" / "task.toml").write_text(SCALE_TOML.format(name="scale"))
    seen = tmp_path / "seen.txt"
    (suite / "Math" / "scale" / "reference.py").write_text(REFERENCE.format(seen=str(seen)))
    (cands / "Math").mkdir(parents=True, exist_ok=True)
    (cands / "Math" / "scale.py").write_text(CANDIDATE)
    return suite, cands, seen


def _scale_run(kbx, tmp_path, method, kernels, env=None, *extra):
    suite, cands, seen = _suite(tmp_path)
    seen.unlink(missing_ok=True)
    db = tmp_path / "kbx.db"
    proc = kbx("--suite", str(suite), "eval", "--method", method, "--candidates", str(cands),
               "--device", "cpu", "--track", "any", "--db", str(db), "--ref-cache", "off",
               "--kernel-cache", str(kernels), "--jobs", "1", *extra, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = kbx("--suite", str(suite), "results", "--db", str(db), "--format", "json", check=True)
    status = [r["status"] for r in json.loads(out.stdout)["results"] if r["method"] == method]
    return proc.stderr, status[0], set(seen.read_text().split())


@pytest.mark.skipif(os.geteuid() != 0, reason="candidates are confined only when kbx runs as root")
def test_the_references_get_the_cache_and_the_candidates_do_not(kbx, tmp_path):
    kernels = tmp_path / "kernels"
    _, status, seen = _scale_run(kbx, tmp_path, "confined", kernels)
    assert seen == {str(kernels)}, "every reference call ran with the cache"
    assert status == "passed", "the candidate was given the cache"
    assert oct(kernels.stat().st_mode & 0o777) == oct(0o700)

    _, status, seen = _scale_run(kbx, tmp_path, "off", "off")
    assert seen == {"-"} and status == "passed"


def test_no_cache_for_the_references_while_candidates_are_not_confined(kbx, tmp_path):
    kernels = tmp_path / "kernels"
    env = dict(os.environ, KBX_CONFINE="0")
    err, status, seen = _scale_run(kbx, tmp_path, "unconfined", kernels, env,
                                   "--allow-unisolated")
    assert seen == {"-"}
    assert status == "passed"
    assert "--kernel-cache is off: candidates are not confined" in err
    assert not kernels.exists()


def _run_attack(kbx, tmp_path, kernels, env=None, *extra):
    cands = tmp_path / "hostile" / "Activation"
    cands.mkdir(parents=True, exist_ok=True)
    (cands / "relu.py").write_text(ATTACK.read_text())
    db = tmp_path / "attack.db"
    proc = kbx("eval", "--method", "hostile", "--candidates", str(tmp_path / "hostile"),
               "--tasks", TASK, "--device", "cpu", "--track", "any", "--db", str(db),
               "--ref-cache", "off", "--kernel-cache", str(kernels), "--jobs", "1", *extra,
               env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = kbx("results", "--db", str(db), "--format", "json", check=True)
    return json.loads(out.stdout)["results"][0]["status"]


def _filled(kernels):
    kernels.mkdir(mode=0o700)
    planted = kernels / "zeta_kernel_arch9.0_nvrtc13.0_sass_100_0123abcd"
    planted.write_bytes(b"a compiled kernel" * 8)
    return {p.name: p.read_bytes() for p in kernels.iterdir()}


@pytest.mark.skipif(os.geteuid() != 0, reason="candidates are confined only when kbx runs as root")
def test_a_candidate_cannot_reach_the_cache(kbx, tmp_path):
    kernels = tmp_path / "kernels"
    before = _filled(kernels)
    assert _run_attack(kbx, tmp_path, kernels) == "passed"
    assert {p.name: p.read_bytes() for p in kernels.iterdir()} == before


@pytest.mark.alone
def test_the_attack_is_real_where_candidates_are_not_confined(kbx, tmp_path):
    """Unconfined (KBX_CONFINE=0), the same candidate finds the folder and writes into it: why
    kbx gives the references no kernel cache then. Alone: unconfined, it sees every process of
    the machine and writes into any --kernel-cache on their command lines, the other tests'
    included (CI once saw test_a_candidate_cannot_reach_the_cache's folder overwritten, its
    candidate passed and confined, while this test ran beside it)."""
    kernels = tmp_path / "kernels"
    before = _filled(kernels)
    env = dict(os.environ, KBX_CONFINE="0")
    assert _run_attack(kbx, tmp_path, kernels, env, "--allow-unisolated") != "passed"
    assert {p.name: p.read_bytes() for p in kernels.iterdir()} != before
