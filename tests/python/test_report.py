"""`kbx report` end to end: a synthetic database (3 methods x 3 categories, timed cases with a
cost model, a calibration, refinement rounds) made with `kbx import` and SQL, the report folder
written from it, and its index.html opened in headless Chromium (Debian's `chromium`): no
console message from the page, every chart in the DOM, and a screenshot kept as a CI artifact
(build/artifacts/report-screenshot.png, or $KBX_ARTIFACTS)."""

import json
import os
import pathlib
import re
import shutil
import sqlite3
import subprocess

import pytest

from conftest import ROOT

CHARTS = ["chart-fastp", "chart-heatmap", "chart-speedup", "chart-roofline", "chart-rounds"]
ARTIFACTS = pathlib.Path(os.environ.get("KBX_ARTIFACTS", ROOT / "build" / "artifacts"))
FINGERPRINT = "synthetic-h200"
COPY_BW = 4.8e12  # B/s, the calibration's copy bandwidth
TASKS = ["Activation/gelu", "Activation/relu", "Math/add", "Math/abs", "Reduce/sum",
         "Reduce/argmax"]
# Per method, each task's verdict: a speedup (passed) or a failing status.
VERDICTS = {
    "oneshot": [1.3, 0.72, 2.4, "numerical_mismatch", 0.95, "compile_error"],
    "bestof4": [1.8, 1.1, 3.1, 0.88, "runtime_error", 1.6],
}
# The refinement method: three rounds, each task's verdict per round.
ROUNDS = [
    ["compile_error", "numerical_mismatch", 1.05, "runtime_error", "compile_error", 0.6],
    [1.4, "numerical_mismatch", 1.9, 0.9, "numerical_mismatch", 0.8],
    [2.2, 1.2, 2.6, "numerical_mismatch", 0.7, 1.7],  # Math/abs regressed
]


# ---- Chromium ----------------------------------------------------------------------------------

def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        if os.environ.get("KBX_REQUIRE_CHROMIUM") == "1":
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install --no-install-recommends chromium)")
    return path


def run_chromium(url, profile, *flags):
    """Headless Chromium on a page, its console logged to stderr; returns the process."""
    cmd = [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
           "--hide-scrollbars", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           *flags, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


# Chromium logs each console message of a page as
#   [pid:tid:time:INFO:CONSOLE:3] "message", source: file:///.../index.html (3)
# (older builds: CONSOLE(3)); uncaught exceptions and CSP violations arrive the same way.
CONSOLE = re.compile(r':CONSOLE[:(]\d*\)?\] "(?P<message>.*)", source: (?P<source>\S*)')


def console_messages(stderr, page_url):
    """The console messages (errors, warnings, logs) and uncaught errors of the page."""
    found = []
    for line in stderr.splitlines():
        m = CONSOLE.search(line)
        if m and m.group("source").startswith(page_url):
            found.append(m.group("message"))
        elif "Uncaught" in line:
            found.append(line)
    return found


def test_the_console_scan_sees_a_broken_page(tmp_path):
    """The scan the report is checked with catches what it must: console.error, an uncaught
    exception and a blocked fetch (the report's Content-Security-Policy forbids every fetch)."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><meta "
        "http-equiv='Content-Security-Policy' content=\"default-src 'none'; script-src "
        "'unsafe-inline'\"></head><body><img src='https://example.invalid/x.png'>"
        "<script>console.error('planted error'); notAFunction();</script></body></html>")
    url = page.as_uri()
    proc = run_chromium(url, tmp_path / "profile", "--dump-dom")
    messages = console_messages(proc.stderr, url)
    assert any("planted error" in m for m in messages), proc.stderr
    assert any("Uncaught ReferenceError" in m for m in messages), proc.stderr
    assert any("Content Security Policy" in m for m in messages), proc.stderr


# ---- the synthetic database ------------------------------------------------------------------

def import_candidates(kbx, db, method, tag, tasks, folder):
    """Candidates through kbx's own import; returns {task: candidate id} of this import."""
    jsonl = folder / f"{method}-{tag}.jsonl"
    with jsonl.open("w") as f:
        for task in tasks:
            code = f"# {method} {tag} {task}\nimport triton\n"
            f.write(json.dumps({"file": f"{task}.py", "predict": code}) + "\n")
    kbx("import", "kernelbenchx", str(jsonl), "--method", method, "--db", str(db), check=True)
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT task, id FROM candidates WHERE method=? AND origin LIKE ?",
                           (method, f"{jsonl}:%")).fetchall()
    return dict(rows)


def add_run(con, method):
    env = {"gpu": "NVIDIA H200", "gpu_count": 1, "fingerprint": FINGERPRINT}
    cur = con.execute(
        "INSERT INTO runs(run_key, method, device, track, seed, started_at, settings, environment,"
        " kbx_version) VALUES(?, ?, 'cuda', 'triton', 1, '2026-12-01T00:00:00Z', ?, ?, 'test')",
        (f"key-{method}", method, json.dumps({"isolation": "confined"}), json.dumps(env)))
    return cur.lastrowid


def add_result(con, run_id, candidate, method, task, verdict, index):
    """One job's rows; a passed one gets two timed cases whose roofline fractions and arithmetic
    intensities differ from task to task."""
    passed = not isinstance(verdict, str)
    status = "passed" if passed else verdict
    cur = con.execute(
        "INSERT INTO results(run_id, candidate_id, method, task, category, status, detail,"
        " error_ratio, cases_total, cases_passed, speedup, triton_launches, wall_s, overhead_s,"
        " stdout_bytes, created_at, kernel_share) VALUES(?,?,?,?,?,?,'',0.5,2,?,?,4,1.5,1.0,0,"
        " '2026-12-01T00:00:01Z',0.97)",
        (run_id, candidate, method, task, task.split("/")[0], status, 2 if passed else 0,
         verdict if passed else None))
    result_id = cur.lastrowid
    con.execute("INSERT INTO result_grades VALUES(?,?,?,?,?,?,?,NULL)",
                (result_id, status, status, status, int(passed), int(passed), int(passed)))
    if not passed:
        return
    for k, elements in enumerate([1 << 22, 1 << 26]):
        nbytes = 12.0 * elements
        flops = elements * (0.5 + 3 * index + 20 * k)
        fraction = min(0.97, 0.25 + 0.12 * index + 0.3 * k) * min(1.0, verdict)
        cand_ms = nbytes / COPY_BW / fraction * 1e3
        con.execute(
            "INSERT INTO case_results(result_id, name, tier, status, error_ratio, cand_ms,"
            " eager_ms, flops, bytes, dtype, timing_source) VALUES(?,?,'full','passed',0.5,?,?,?,"
            "?,'float32','probe')",
            (result_id, f"full_{k}", cand_ms, cand_ms * verdict, flops, nbytes))


def synthetic_db(kbx, folder):
    db = folder / "synthetic.db"
    ids = {m: import_candidates(kbx, db, m, "final", TASKS, folder) for m in VERDICTS}
    rounds = [import_candidates(kbx, db, "refine", f"round{r}", TASKS, folder)
              for r in range(len(ROUNDS))]
    with sqlite3.connect(db) as con:
        columns = {row[1] for row in con.execute("PRAGMA table_info(candidates)")}
        for r, by_task in enumerate(rounds):
            for task, cand in by_task.items():
                if "round" in columns:  # the schema with rounds
                    con.execute("UPDATE candidates SET round=? WHERE id=?", (r, cand))
                else:  # before it: the round in the candidate's origin
                    con.execute("UPDATE candidates SET origin = origin || ? WHERE id=?",
                                (f" round={r}", cand))
        for method, verdicts in VERDICTS.items():
            run_id = add_run(con, method)
            for i, (task, verdict) in enumerate(zip(TASKS, verdicts)):
                add_result(con, run_id, ids[method][task], method, task, verdict, i)
        run_id = add_run(con, "refine")
        for r, verdicts in enumerate(ROUNDS):
            for i, (task, verdict) in enumerate(zip(TASKS, verdicts)):
                add_result(con, run_id, rounds[r][task], "refine", task, verdict, i)
        con.execute(
            "INSERT INTO calibration(fingerprint, device, gpu, measured_at, peaks, environment)"
            " VALUES(?, 'cuda', 'NVIDIA H200', '2026-12-01T00:00:00Z', ?, '{}')",
            (FINGERPRINT, json.dumps({"copy_bw": COPY_BW, "fp32": 5.1e13, "tf32": 4.9e14,
                                      "bf16": 7.9e14, "fp16": 7.9e14})))
    return db


# ---- the report --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def report(kbx, tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    db = synthetic_db(kbx, folder)
    out = folder / "out"
    proc = kbx("report", "--db", str(db), "--out", str(out), check=True)
    assert "index.html" in proc.stdout
    return out


def test_report_folder_has_its_files(report):
    for name in ("index.html", "summary.md", "results.csv", "results.json"):
        assert (report / name).stat().st_size > 0, name
    doc = json.loads((report / "results.json").read_text())
    assert len(doc["results"]) == 18  # 3 methods x 6 tasks, the newest verdict of each
    refine = [r for r in doc["results"] if r["method"] == "refine"]
    assert [r["status"] == "passed" for r in refine].count(True) == 5  # its last round
    assert (report / "results.csv").read_text().count("\n") == 19


def test_report_page_is_self_contained(report):
    html = (report / "index.html").read_text()
    assert "://" not in html  # no URL of any scheme
    assert not re.search(r"<(link|img|iframe|object|embed)\b", html)
    assert not re.search(r"\ssrc=", html)
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    for chart in CHARTS:
        assert html.count(f'<svg id="{chart}"') == 1, chart
    assert "data-empty" not in html  # every chart has data


def test_report_opens_in_chromium_without_console_errors(report, tmp_path):
    url = (report / "index.html").as_uri()
    proc = run_chromium(url, tmp_path / "profile", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert console_messages(proc.stderr, url) == [], proc.stderr[-3000:]
    dom = proc.stdout
    assert 'data-report-ready="true"' in dom  # the page's script ran to its end
    for chart in CHARTS:
        m = re.search(rf'<svg id="{chart}"[^>]*>\s*<title id="{chart}-title">([^<]+)</title>', dom)
        assert m, f"{chart} missing from the DOM"
        assert m.group(1).strip()
    assert dom.count('class="legend-entry"') == 3 + 3 + 1  # fast_p, roofline, rounds (refine)


def test_report_screenshot_is_kept(report, tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report-screenshot.png"
    shot.unlink(missing_ok=True)
    url = (report / "index.html").as_uri()
    proc = run_chromium(url, tmp_path / "profile", f"--screenshot={shot}",
                        "--window-size=1400,2400")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert console_messages(proc.stderr, url) == [], proc.stderr[-3000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1400, 2400)
    assert len(data) > 50_000  # charts drawn, not a blank page


def test_report_of_a_database_without_results_shows_placeholders(kbx, tmp_path):
    db = tmp_path / "empty.db"
    import_candidates(kbx, db, "m", "only", TASKS[:1], tmp_path)
    out = tmp_path / "out"
    kbx("report", "--db", str(db), "--out", str(out), check=True)
    html = (out / "index.html").read_text()
    for chart in CHARTS:
        assert re.search(rf'<svg id="{chart}"[^>]*>\s*<title id="{chart}-title">', html), chart
    assert html.count('data-empty="true"') == len(CHARTS)


def test_report_errors_name_what_is_wrong(kbx, tmp_path):
    proc = kbx("report", "--db", str(tmp_path / "none.db"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "no such database" in proc.stderr
    db = tmp_path / "one.db"
    import_candidates(kbx, db, "m", "only", TASKS[:1], tmp_path)
    proc = kbx("report", "--db", str(db), "--method", "zeta", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "--method zeta" in proc.stderr


def test_report_help_answers(kbx):
    proc = kbx("report", "--help", check=True)
    for flag in ("--db", "--method", "--out"):
        assert flag in proc.stdout
    assert "index.html" in proc.stdout
