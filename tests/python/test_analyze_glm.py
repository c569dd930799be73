"""kbx analyze's logistic model against R's glm(family = binomial) (issue 15).

A fixture of kernels with a planted category effect (and a small method effect) goes into a
database the way real ones do (`kbx import` of a JSONL file with "sample" fields, then one verdict
per candidate), and into a CSV of (method, category, correct) for R. Deviances, coefficients and
likelihood-ratio p-values must agree to 1e-6. Needs Rscript (r-base-core); CI sets
KBX_REQUIRE_R=1 so that a missing R fails instead of skipping.
"""

import csv
import json
import math
import os
import random
import shutil
import sqlite3
import subprocess

import pytest

from conftest import ROOT

TOLERANCE = 1e-6
# Per category, the log-odds of a correct kernel (planted); per method, a small shift.
CATEGORY_EFFECT = {"Activation": 1.2, "Fusion": -1.0, "Math": 0.6, "Loss": 0.0, "Reduce": 0.3}
METHOD_EFFECT = {"Qwen": 0.0, "claude": 0.35, "gpt": -0.2}  # mixed case: byte-order levels
TASKS_PER_CATEGORY = 6
SAMPLES = 8

R_SCRIPT = r"""
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1], stringsAsFactors = FALSE)
d$category <- factor(d$category, levels = sort(unique(d$category), method = "radix"))
d$method <- factor(d$method, levels = sort(unique(d$method), method = "radix"))
fits <- list("null" = glm(correct ~ 1, family = binomial, data = d),
             "category" = glm(correct ~ category, family = binomial, data = d),
             "method" = glm(correct ~ method, family = binomial, data = d),
             "category + method" = glm(correct ~ category + method, family = binomial, data = d))
for (name in names(fits)) {
  f <- fits[[name]]
  cat(sprintf("model\t%s\tdeviance\t%.17g\n", name, deviance(f)))
  cat(sprintf("model\t%s\tnull_deviance\t%.17g\n", name, f$null.deviance))
  cat(sprintf("model\t%s\tconverged\t%d\n", name, as.integer(f$converged)))
  cf <- coef(f)
  for (term in names(cf)) cat(sprintf("coef\t%s\t%s\t%.17g\n", name, term, cf[[term]]))
}
test <- function(larger, smaller) {
  a <- anova(fits[[smaller]], fits[[larger]], test = "Chisq")
  cat(sprintf("test\t%s\t%s\t%.17g\n", larger, smaller, a[2, "Pr(>Chi)"]))
}
test("category", "null"); test("method", "null")
test("category + method", "category"); test("category + method", "method")
"""


def _tasks(kbx):
    listing = kbx("suite", "list", "--format", "tsv", check=True).stdout.splitlines()[1:]
    by_category = {}
    for line in listing:
        category, name = line.split("\t")[:2]
        by_category.setdefault(category, []).append(name)
    return {c: sorted(by_category[c])[:TASKS_PER_CATEGORY] for c in CATEGORY_EFFECT}


def _fixture(kbx, tmp_path):
    """The database and the CSV of the same kernels; returns (db, csv)."""
    rng = random.Random(20261215)
    tasks = _tasks(kbx)
    db = tmp_path / "glm.db"
    rows = []  # (method, task, sample, correct)
    for method, shift in METHOD_EFFECT.items():
        lines = []
        for category, names in tasks.items():
            for name in names:
                for sample in range(SAMPLES):
                    p = 1 / (1 + math.exp(-(CATEGORY_EFFECT[category] + shift)))
                    rows.append((method, f"{category}/{name}", sample, rng.random() < p))
                    lines.append(json.dumps({"file": f"{category}/{name}.py", "sample": sample,
                                             "predict": f"# {method} {name} {sample}\n"}))
        jsonl = tmp_path / f"{method}.jsonl"
        jsonl.write_text("\n".join(lines) + "\n")
        kbx("import", "kernelbenchx", str(jsonl), "--method", method, "--db", str(db),
            check=True)
    con = sqlite3.connect(db)
    now = "2026-12-15T00:00:00Z"
    run_of = {}
    for method in METHOD_EFFECT:
        cur = con.execute(
            "INSERT INTO runs(run_key, method, device, track, seed, started_at, environment) "
            "VALUES(?, ?, 'cuda', 'triton', 1, ?, ?)",
            (f"k-{method}", method, now, json.dumps({"gpu": "NVIDIA H200"})))
        run_of[method] = cur.lastrowid
    candidates = {(m, t, s): i for i, m, t, s in
                  con.execute("SELECT id, method, task, sample FROM candidates")}
    assert len(candidates) == len(rows)
    for method, task, sample, correct in rows:
        status = "passed" if correct else "numerical_mismatch"
        cur = con.execute(
            "INSERT INTO results(run_id, candidate_id, method, task, category, status, speedup, "
            "created_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
            (run_of[method], candidates[(method, task, sample)], method, task,
             task.split("/")[0], status, 1.0 if correct else None, now))
        con.execute("INSERT INTO result_grades VALUES(?, ?, ?, ?, ?, ?, ?, NULL)",
                    (cur.lastrowid, status, status, status, int(correct), int(correct),
                     int(correct)))
    con.commit()
    con.close()
    table = tmp_path / "kernels.csv"
    with open(table, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["method", "category", "correct"])
        for method, task, _, correct in rows:
            w.writerow([method, task.split("/")[0], int(correct)])
    return db, table


def _rscript():
    path = shutil.which("Rscript")
    if path is None:
        if os.environ.get("KBX_REQUIRE_R") == "1":
            pytest.fail("Rscript not found (apt-get install r-base-core); KBX_REQUIRE_R=1")
        pytest.skip("Rscript not found (apt-get install r-base-core)")
    return path


def _r_fit(rscript, table, tmp_path):
    script = tmp_path / "glm.R"
    script.write_text(R_SCRIPT)
    out = subprocess.run([rscript, "--vanilla", str(script), str(table)], capture_output=True,
                         text=True, timeout=300, check=True).stdout
    models, coefs, tests = {}, {}, {}
    for line in out.splitlines():
        kind, *fields = line.split("\t")
        if kind == "model":
            models.setdefault(fields[0], {})[fields[1]] = float(fields[2])
        elif kind == "coef":
            coefs[(fields[0], fields[1])] = float(fields[2])
        elif kind == "test":
            tests[(fields[0], fields[1])] = float(fields[2])
    return models, coefs, tests


def _kbx_fit(kbx, db):
    doc = json.loads(kbx("analyze", "--db", str(db), "--analysis", "deviance", "--format",
                         "json", check=True).stdout)
    assert doc["schema_version"] == 1
    tables = {t["name"]: t["rows"] for t in doc["tables"]}
    models = {r["model"]: r for r in tables["deviance"]}
    coefs = {(r["model"], r["term"]): r["estimate"] for r in tables["deviance_coefficients"]}
    tests = {(r["model"], r["against"]): r["p_value"] for r in tables["deviance_tests"]}
    return models, coefs, tests


def test_glm_agrees_with_r(kbx, tmp_path):
    rscript = _rscript()
    db, table = _fixture(kbx, tmp_path)
    r_models, r_coefs, r_tests = _r_fit(rscript, table, tmp_path)
    k_models, k_coefs, k_tests = _kbx_fit(kbx, db)
    worst = 0.0
    assert set(k_models) == set(r_models)
    for name, r in r_models.items():
        assert r["converged"] == 1 and k_models[name]["converged"], name
        for key in ("deviance", "null_deviance"):
            diff = abs(k_models[name][key] - r[key])
            worst = max(worst, diff)
            assert diff <= TOLERANCE, (name, key, k_models[name][key], r[key])
    assert set(k_coefs) == set(r_coefs)
    for key, r in r_coefs.items():
        diff = abs(k_coefs[key] - r)
        worst = max(worst, diff)
        assert diff <= TOLERANCE, (key, k_coefs[key], r)
    for key, r in r_tests.items():
        assert abs(k_tests[key] - r) <= TOLERANCE * max(1.0, r), (key, k_tests[key], r)
    # the planted effect shows: category explains more than method
    explained = {n: m["explained"] for n, m in k_models.items()}
    assert explained["category"] > explained["method"]
    print(f"kbx vs R: max |difference| over deviances and coefficients {worst:.3g}")
