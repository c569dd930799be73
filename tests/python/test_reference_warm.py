"""References and judges fork from a warm parent of their own (trusted workers only): the same
cases and verdicts as when they start cold, and `--cold` starts them cold again."""

import json
import os

TASKS = "Activation/relu,Math/mul,Loss/mse_loss,Random/rand"  # rand: a judge of random cases


def _run(kbx, tmp_path, name, *extra):
    db = tmp_path / f"{name}.db"
    env = dict(os.environ, KBX_DEBUG_TIMING="1")
    proc = kbx("eval", "--method", "expert", "--candidates", "solutions/expert", "--tasks", TASKS,
               "--device", "cpu", "--seed", "11", "--db", str(db), "--work",
               str(tmp_path / f"work-{name}"), "--allow-unisolated", *extra, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = kbx("results", "--db", str(db), "--format", "json", check=True)
    return proc.stderr, json.loads(res.stdout)


def _started(stderr):
    return [line for line in stderr.splitlines() if line.startswith("kbx: reference worker for ")]


def _judges(stderr):
    return [line for line in stderr.splitlines() if ": judge of " in line]


def _cases(results):
    rows = {}
    for job in results["results"]:
        for case in job.get("cases", []):
            rows[(job["task"], case["name"])] = (case["status"], case.get("error_ratio"))
    return rows


def test_references_and_judges_fork_from_their_warm_parent_with_cold_results(kbx, tmp_path):
    warm_err, warm = _run(kbx, tmp_path, "warm")
    cold_err, cold = _run(kbx, tmp_path, "cold", "--cold")
    assert _started(warm_err) and all("forked from the warm parent" in line
                                      for line in _started(warm_err)), warm_err[-3000:]
    assert _started(cold_err) and all("started cold" in line for line in _started(cold_err))
    assert _judges(warm_err) and all("forked from the warm parent" in line
                                     for line in _judges(warm_err)), warm_err[-3000:]
    assert _judges(cold_err) and all("started cold" in line for line in _judges(cold_err))
    assert [r["status"] for r in warm["results"]] == ["passed"] * 4, warm
    warm_cases, cold_cases = _cases(warm), _cases(cold)
    assert len(warm_cases) > 20, warm
    assert warm_cases == cold_cases
