"""kbx generate and kbx run against the loopback server (tests/gen/loopback_server.py).

The client's protocol (rate limits with Retry-After, replies without code, the key kept out of
the database), and end to end on the CPU: a refine method over three tasks with scripted replies
(one correct at once, one wrong twice, one repaired in round 2), its round-2 prompts carrying
the round-1 verdicts, every exchange stored, and --replay giving the same candidates and
verdicts without a model.
"""
import json
import os
import pathlib
import sqlite3
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "gen" / "loopback_server.py"
TEMPLATES = ROOT / "methods" / "templates"
EXPERT = ROOT / "solutions" / "expert"
SECRET = "sk-kbx-test-0123456789abcdef"


class Loopback:
    """The loopback server on a free port, serving `replies`; .requests() reads its log."""

    def __init__(self, folder, replies):
        self.log = folder / "requests.jsonl"
        script = folder / "script.json"
        script.write_text(json.dumps({"replies": replies}))
        self.proc = subprocess.Popen([sys.executable, str(SERVER), "--script", str(script),
                                      "--log", str(self.log)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), line
        self.url = f"http://127.0.0.1:{int(line.split()[1])}/v1"

    def requests(self):
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(replies):
        servers.append(Loopback(tmp_path, replies))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


def write_method(folder, url, strategy="oneshot", model_extra="", strategy_table=""):
    path = folder / "method.toml"
    path.write_text(f"""name = "scripted"
strategy = "{strategy}"
[model]
base_url = "{url}"
model = "loopback-model"
backoff_s = 0.01
max_retries = 2
timeout_s = 20
concurrency = 2
input_price_per_mtok = 1.0
output_price_per_mtok = 2.0
{model_extra}
[prompts]
system = "{TEMPLATES / 'system.md'}"
task = "{TEMPLATES / 'task.md'}"
reflect = "{TEMPLATES / 'reflect.md'}"
[{strategy}]
{strategy_table}
""")
    return path


def env_without_proxy(**extra):
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(extra)
    return env


def fenced(code):
    return f"Here is the kernel.\n\n```python\n{code}```\n"


def db_rows(db, sql, *args):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def first_prompt(task):
    return f"PyTorch task {task}.\n"


def test_rate_limit_honours_retry_after(kbx, serve, tmp_path):
    relu = (EXPERT / "Activation" / "relu.py").read_text()
    server = serve([{"status": 429, "headers": {"Retry-After": "1"}},
                    {"content": fenced(relu)}])
    db = tmp_path / "g.db"
    p = kbx("generate", "--method-config", str(write_method(tmp_path, server.url)),
            "--tasks", "Activation/relu", "--db", str(db), env=env_without_proxy())
    assert p.returncode == 0, p.stderr
    log = server.requests()
    assert len(log) == 2
    assert log[1]["time"] - log[0]["time"] >= 0.9  # backoff_s is 0.01: the server's Retry-After
    (attempts, status, cand), = db_rows(db, "SELECT attempts, http_status, candidate_id "
                                            "FROM exchanges")
    assert (attempts, status) == (2, 200) and cand is not None
    assert "total" in p.stdout


def test_malformed_and_missing_code_blocks_are_recorded(kbx, serve, tmp_path):
    server = serve([
        {"match": first_prompt("Activation/relu"), "content": "I cannot write this kernel."},
        {"match": first_prompt("Math/add"),
         "content": "```python\nimport triton\ndef add(input, other, alpha=1, out=None):\n"
                    "    return input"},  # cut off: the block is never closed
        {"match": first_prompt("Math/mul"), "content": fenced("def helper():\n    pass\n")},
        {"match": first_prompt("Math/sub"), "body": "{not json", "status": 200},
    ])
    db = tmp_path / "g.db"
    p = kbx("generate", "--method-config", str(write_method(tmp_path, server.url)),
            "--tasks", "Activation/relu,Math/add,Math/mul,Math/sub", "--db", str(db),
            env=env_without_proxy())
    assert p.returncode == 1, p.stderr  # the unreadable reply is a failed request
    rows = dict((task, (cand, why, err)) for task, cand, why, err in db_rows(
        db, "SELECT task, candidate_id, no_candidate, error FROM exchanges"))
    assert rows["Activation/relu"][0] is None and "no fenced code block" in rows["Activation/relu"][1]
    assert rows["Math/add"][0] is None and "not closed" in rows["Math/add"][1]
    assert rows["Math/mul"][0] is None and "none defines the entry function mul" in rows["Math/mul"][1]
    assert rows["Math/sub"][0] is None and "not JSON" in rows["Math/sub"][2]
    assert db_rows(db, "SELECT COUNT(*) FROM candidates") == [(0,)]


def test_api_key_is_sent_but_never_stored(kbx, serve, tmp_path):
    relu = (EXPERT / "Activation" / "relu.py").read_text()
    server = serve([{"content": fenced(relu) + f"(echoing {SECRET})", "times": 0}])
    config = write_method(tmp_path, server.url, model_extra='api_key_env = "KBX_TEST_API_KEY"')
    db = tmp_path / "g.db"
    missing = kbx("generate", "--method-config", str(config), "--tasks", "Activation/relu",
                  "--db", str(db), env=env_without_proxy())
    assert missing.returncode == 2 and "KBX_TEST_API_KEY" in missing.stderr
    p = kbx("generate", "--method-config", str(config), "--tasks", "Activation/relu",
            "--db", str(db), env=env_without_proxy(KBX_TEST_API_KEY=SECRET))
    assert p.returncode == 0, p.stderr
    (log,) = server.requests()
    assert log["headers"]["Authorization"] == f"Bearer {SECRET}"
    (response,), = db_rows(db, "SELECT response FROM exchanges")
    assert "[api key]" in response  # the server echoed the key: scrubbed before storing
    con = sqlite3.connect(db)
    dump = "\n".join(con.iterdump())
    con.close()
    assert SECRET not in dump
    assert SECRET not in p.stdout + p.stderr


def test_streaming_generate_counts_tokens(kbx, serve, tmp_path):
    relu = (EXPERT / "Activation" / "relu.py").read_text()
    server = serve([{"content": fenced(relu), "usage": {"prompt_tokens": 1000,
                                                        "completion_tokens": 500}}])
    config = write_method(tmp_path, server.url, model_extra="stream = true")
    db = tmp_path / "g.db"
    p = kbx("generate", "--method-config", str(config), "--tasks", "Activation/relu",
            "--db", str(db), env=env_without_proxy())
    assert p.returncode == 0, p.stderr
    (log,) = server.requests()
    assert log["body"]["stream"] is True
    assert log["body"]["stream_options"] == {"include_usage": True}
    (response, streamed, prompt, completion, cost, cand), = db_rows(
        db, "SELECT response, streamed, prompt_tokens, completion_tokens, cost, candidate_id "
            "FROM exchanges")
    assert response.startswith("data: ") and response.rstrip().endswith("data: [DONE]")
    assert (streamed, prompt, completion) == (1, 1000, 500) and cand is not None
    assert cost == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    (source,), = db_rows(db, "SELECT source FROM candidates")
    assert source == relu
    assert db_rows(db, "SELECT requests, prompt_tokens, completion_tokens FROM gen_costs") == \
        [(1, 1000, 500)]


def test_concurrency_limit_and_samples(kbx, serve, tmp_path):
    relu = (EXPERT / "Activation" / "relu.py").read_text()
    server = serve([{"content": fenced(relu), "delay_s": 0.6, "times": 0}])
    config = write_method(tmp_path, server.url, strategy_table="samples = 4")  # concurrency 2
    db = tmp_path / "g.db"
    p = kbx("generate", "--method-config", str(config), "--tasks", "Activation/relu",
            "--db", str(db), env=env_without_proxy())
    assert p.returncode == 0, p.stderr
    times = sorted(r["time"] for r in server.requests())
    assert len(times) == 4
    # two at a time: the third request waits for a reply to the first two (0.6 s)
    assert times[1] - times[0] < 0.4 and times[2] - times[0] >= 0.5
    # the same code as four samples: four candidates (one per sample), no round
    assert db_rows(db, "SELECT sample, round, worker FROM candidates ORDER BY sample") == \
        [(1, None, None), (2, None, None), (3, None, None), (4, None, None)]


# ---- end to end: kbx run of a refine method on the CPU, then --replay ------------------------

def sabotaged(path, old, new):
    code = path.read_text()
    assert old in code, (path, old)
    return code.replace(old, new)


def refine_script():
    relu = (EXPERT / "Activation" / "relu.py").read_text()
    add_wrong = sabotaged(EXPERT / "Math" / "add.py", "res = x + alpha * y", "res = x + alpha * y + 1.0")
    add_raises = (EXPERT / "Math" / "add.py").read_text().replace(
        "def add(input, other, alpha=1, out=None):",
        "def add(input, other, alpha=1, out=None):\n    raise RuntimeError('still broken')", 1)
    mul = (EXPERT / "Math" / "mul.py").read_text()
    mul_wrong = sabotaged(EXPERT / "Math" / "mul.py", "(x * y).to(", "(x * y * 1.5).to(")
    reflect = "kbx evaluated your kernel for "
    return [
        {"match": reflect + "Math/add", "content": fenced(add_raises)},
        {"match": reflect + "Math/mul", "content": fenced(mul)},
        {"match": first_prompt("Activation/relu"), "content": fenced(relu)},
        {"match": first_prompt("Math/add"), "content": fenced(add_wrong)},
        {"match": first_prompt("Math/mul"), "content": fenced(mul_wrong)},
    ]


def run_refine(kbx, config, db, *extra):
    return kbx("run", "--method-config", str(config), "--tasks",
               "Activation/relu,Math/add,Math/mul", "--db", str(db), "--device", "cpu",
               "--jobs", "2", *extra, env=env_without_proxy(), timeout=1200)


def session_candidates(db, session):
    """(task, round, sample, sha256) of each candidate a session's exchanges gave, with its
    newest verdict."""
    return sorted(db_rows(db, """
        SELECT e.task, e.round, e.sample, c.sha256,
               (SELECT r.status FROM results r WHERE r.candidate_id = c.id
                ORDER BY r.run_id DESC, r.id DESC LIMIT 1)
        FROM exchanges e JOIN candidates c ON c.id = e.candidate_id
        WHERE e.session_id = ?""", session))


def first_failure(db, task, round_):
    (status, case, tier, cstatus, ratio), = db_rows(db, """
        SELECT r.status, k.name, k.tier, k.status, k.error_ratio FROM results r
        JOIN candidates c ON c.id = r.candidate_id
        JOIN case_results k ON k.result_id = r.id
        WHERE c.task = ? AND c.round = ? AND k.status <> 'passed'
        ORDER BY k.rowid LIMIT 1""", task, round_)
    return (f"status: {status} (",
            f"first failing case: {case} (tier {tier}): {cstatus}, error ratio {ratio:.4g}")


def test_run_refine_feeds_verdicts_back_and_replays(kbx, serve, tmp_path):
    server = serve(refine_script())
    config = write_method(tmp_path, server.url, strategy="refine",
                          strategy_table="rounds = 2\ncandidates = 1\nstop_at_correct = true")
    db = tmp_path / "run.db"
    p = run_refine(kbx, config, db)
    assert p.returncode == 0, p.stdout + p.stderr
    log = server.requests()
    # round 1: three tasks; round 2: the two that failed (relu was correct at once)
    assert len(log) == 5, [r["body"]["messages"][-1]["content"][:80] for r in log]

    # every exchange is in the database, as the server received it
    stored = db_rows(db, "SELECT request, task, round, http_status FROM exchanges ORDER BY id")
    assert len(stored) == 5
    assert sorted(json.dumps(json.loads(r[0]), sort_keys=True) for r in stored) == \
        sorted(json.dumps(r["body"], sort_keys=True) for r in log)
    assert all(r[3] == 200 for r in stored)

    # the verdicts: relu correct in round 1, add wrong in both rounds, mul repaired in round 2
    original = db_rows(db, "SELECT MIN(id) FROM gen_sessions")[0][0]
    verdicts = {(t, r): s for t, r, _, _, s in session_candidates(db, original)}
    assert verdicts[("Activation/relu", 1)] == "passed"
    assert verdicts[("Math/add", 1)] != "passed" and verdicts[("Math/add", 2)] != "passed"
    assert verdicts[("Math/mul", 1)] != "passed" and verdicts[("Math/mul", 2)] == "passed"
    assert ("Activation/relu", 2) not in verdicts

    # the round-2 prompts carry the round-1 verdicts' figures
    for task in ("Math/add", "Math/mul"):
        (msgs,) = [r["body"]["messages"] for r in log
                   if r["body"]["messages"][-1]["content"].startswith(
                       "kbx evaluated your kernel for " + task)]
        assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
        for figure in first_failure(db, task, 1):
            assert figure in msgs[-1]["content"], (figure, msgs[-1]["content"])

    # cost per task is stored
    costs = {t: (req, ok) for t, req, ok in db_rows(
        db, "SELECT task, requests, correct FROM gen_costs WHERE session_id = ?", original)}
    assert costs == {"Activation/relu": (1, 1), "Math/add": (2, 0), "Math/mul": (2, 1)}

    # --replay: no model (the server is gone), the same candidates and verdicts
    server.stop()
    replay = run_refine(kbx, config, db, "--replay")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    again = db_rows(db, "SELECT MAX(id) FROM gen_sessions")[0][0]
    assert again != original
    assert session_candidates(db, again) == session_candidates(db, original)
    assert db_rows(db, "SELECT COUNT(*) FROM exchanges WHERE session_id = ? AND "
                       "replayed_from IS NOT NULL", again) == [(5,)]


def test_replay_names_a_request_without_a_stored_reply(kbx, tmp_path):
    config = write_method(tmp_path, "http://127.0.0.1:9/v1")
    p = kbx("generate", "--method-config", str(config), "--tasks", "Math/add",
            "--db", str(tmp_path / "empty.db"), "--replay", env=env_without_proxy())
    assert p.returncode == 2
    assert "no stored reply for Math/add sample 1 turn 1" in p.stderr, p.stderr


def test_run_parallel_workers_keep_their_own_conversations(kbx, serve, tmp_path):
    relu = (EXPERT / "Activation" / "relu.py").read_text()
    relu_wrong = sabotaged(EXPERT / "Activation" / "relu.py", "tl.where(x < 0, 0.0, x)",
                           "tl.where(x < 0, 0.0, x * 1.5)")
    reflect = "kbx evaluated your kernel for Activation/relu"
    server = serve([
        {"match": [reflect, "status: passed"], "content": fenced(relu) + "(faster)"},
        {"match": reflect, "content": fenced(relu) + "(repaired)"},
        {"match": first_prompt("Activation/relu"), "content": fenced(relu)},
        {"match": first_prompt("Activation/relu"), "content": fenced(relu_wrong)},
    ])
    config = write_method(tmp_path, server.url, strategy="parallel",
                          strategy_table="workers = 2\nrounds = 2\nstop_at_correct = false")
    db = tmp_path / "par.db"
    p = kbx("run", "--method-config", str(config), "--tasks", "Activation/relu", "--db", str(db),
            "--device", "cpu", "--jobs", "2", env=env_without_proxy(), timeout=1200)
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(server.requests()) == 4
    rows = db_rows(db, """SELECT e.worker, e.round, e.request, e.response, c.worker, c.sample,
                          (SELECT status FROM results r WHERE r.candidate_id = c.id)
                          FROM exchanges e JOIN candidates c ON c.id = e.candidate_id""")
    by = {(w, r): (json.loads(req)["messages"], json.loads(resp), cw, cs, status)
          for w, r, req, resp, cw, cs, status in rows}
    assert sorted(by) == [("w1", 1), ("w1", 2), ("w2", 1), ("w2", 2)]
    statuses = sorted(by[(w, 1)][4] for w in ("w1", "w2"))
    assert statuses[1] == "passed" and statuses[0] != "passed"
    for w in ("w1", "w2"):
        msgs, _, worker, sample, status = by[(w, 2)]
        first_reply = by[(w, 1)][1]["choices"][0]["message"]["content"]
        assert msgs[2] == {"role": "assistant", "content": first_reply}  # its own conversation
        expected = "status: passed" if by[(w, 1)][4] == "passed" else "status: " + by[(w, 1)][4]
        assert expected in msgs[3]["content"]
        assert (worker, sample, status) == (w, int(w[1]), "passed")
