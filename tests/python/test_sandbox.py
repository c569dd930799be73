"""The sandbox as a candidate sees it, with and without the warm parent: no secrets in the
environment, no way to the host's loopback (a new network namespace), and the run goes on."""

import json
import os
import socket
import subprocess

import pytest

from conftest import ROOT, kbx_binary

FIXTURE = ROOT / "tests" / "fixtures" / "candidates" / "sandbox_probe" / "Activation" / "gelu.py"


def _has_network_namespace():
    """Whether `kbx doctor` says candidates get a network namespace on this machine."""
    proc = subprocess.run([kbx_binary(), "doctor"], capture_output=True, text=True)
    prefix = "sandbox: network namespace "
    said = [line for line in proc.stdout.splitlines() if line.startswith(prefix)]
    # A doctor that no longer says so must fail here, not turn the check below into a skip.
    assert said, ("kbx doctor does not report the network namespace", proc.returncode,
                  proc.stdout, proc.stderr)
    return said[0].startswith(prefix + "yes")


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_candidate_sees_no_secret_and_no_host_network(tmp_path, mode):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    folder = tmp_path / "cands" / "Activation"
    folder.mkdir(parents=True)
    (folder / "gelu.py").write_text(
        FIXTURE.read_text().replace("PROBE_PORT = None", f"PROBE_PORT = {port}"))
    env = dict(os.environ, KBX_TEST_SECRET="hunter2", OPENAI_API_KEY="sk-test")
    args = [kbx_binary(), "eval", "--method", f"probe_{mode}", "--candidates",
            str(tmp_path / "cands"), "--device", "cpu", "--tasks", "Activation/gelu",
            "--db", str(tmp_path / "k.db"), "--work", str(tmp_path / "work")]
    if mode == "cold":
        args.append("--cold")
    # Confined where the machine can (root); else kbx would refuse to run the candidate at all,
    # and the environment's scrubbing is still checked.
    args.append("--allow-unisolated")
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    server.close()
    res = subprocess.run([kbx_binary(), "results", "--db", str(tmp_path / "k.db"), "--format",
                          "json"], capture_output=True, text=True)
    rows = json.loads(res.stdout)["results"]
    assert len(rows) == 1, (proc.returncode, proc.stderr[-2000:])
    row = rows[0]
    if not _has_network_namespace():
        # The secret must stay hidden everywhere; only reaching the loopback may fail the job here.
        leaks = row["detail"] if row["status"] != "passed" else ""
        assert row["status"] == "passed" or "reached 127.0.0.1" in leaks, (row, proc.stderr[-2000:])
        assert "SECRET" not in leaks and "API_KEY" not in leaks, row
        pytest.skip("no network namespace on this machine: the secret was checked, the network "
                    "isolation could not be")
    assert row["status"] == "passed", (row, proc.stderr[-2000:])
