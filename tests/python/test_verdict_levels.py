"""Verdict candidates of tests/adversarial/verdict on the CPU: per-element special values, honest
glue around Triton kernels, graded levels (README there lists what each must give)."""
import json
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "tests" / "adversarial" / "verdict"

# candidate -> expected status at strict, core, kbx on the CPU
EXPECTED = {
    "gelu_wrong_specials": ("numerical_mismatch", "passed", "passed"),
    "gelu_f32_only": ("runtime_error", "runtime_error", "passed"),
    "add_broadcast_contiguous": ("passed", "passed", "passed"),
    "softmax_transpose_copy": ("passed", "passed", "passed"),
    "permute_strided_gather": ("passed", "passed", "passed"),  # odd strides, read as they are
    "compiled_handle": ("passed", "passed", "passed"),  # launched through a compiled handle (GPU)
    "matmul_token_launch": ("passed", "passed", "passed"),  # fallback only under the GPU probe
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verdict_candidate_levels(kbx, tmp_path, name):
    db = tmp_path / "v.db"
    env = dict(os.environ, KBX_WORK=str(tmp_path / "work"))
    kbx("eval", "--method", name, "--candidates", str(CANDIDATES / name), "--device", "cpu",
        "--db", str(db), "--fresh", check=True, env=env)
    doc = json.loads(kbx("results", "--db", str(db), "--format", "json", check=True).stdout)
    (r,) = doc["results"]
    got = tuple(r["levels"][lvl]["status"] for lvl in ("strict", "core", "kbx"))
    assert got == EXPECTED[name], r["detail"]
    assert r["status"] == got[0]
    if name == "gelu_wrong_specials":
        assert "per element" in r["detail"]
    csv = kbx("results", "--db", str(db), "--format", "csv", "--level", "kbx", check=True).stdout
    header, row = csv.strip().splitlines()
    cols = dict(zip(header.split(","), row.split(",")))
    assert cols["status"] == got[2] and cols["strict"] == got[0] and cols["kbx"] == got[2]
