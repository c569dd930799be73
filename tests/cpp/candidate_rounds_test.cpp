// A candidate's round, sample and worker (schema 5, issue 15): read from KernelBenchX JSONL lines,
// stored, one candidate per (method, task, source, round, sample), and a schema-4 database
// migrated with its candidates' ids kept.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "common/util.h"
#include "plan/candidates.h"
#include "store/store.h"
#include "test_util.h"

namespace kbx {
namespace {
namespace fs = std::filesystem;

TEST(CandidateRounds, JsonlLinesCarryRoundSampleAndWorker) {
  test::TempDir dir;
  const auto path = dir.path() / "c.jsonl";
  write_file(path,
             "{\"file\": \"Math/add.py\", \"predict\": \"a1\", \"round\": 1, \"sample\": 0, "
             "\"worker\": \"gpt-a\"}\n"
             "{\"file\": \"Math/add.py\", \"predict\": \"a2\", \"round\": 2, \"sample\": 0, "
             "\"worker\": 7}\n"
             "{\"file\": \"Math/add.py\", \"predict\": \"a1\", \"round\": 1, \"sample\": 1}\n"
             "{\"file\": \"Math/add.py\", \"predict\": \"x\", \"round\": \"two\"}\n"
             "{\"file\": \"Math/add.py\", \"predict\": \"x\", \"sample\": -1}\n"
             "{\"file\": \"Math/add.py\", \"predict\": \"x\", \"worker\": [1]}\n");
  auto found = plan::from_path(path, "m");
  ASSERT_EQ(found.candidates.size(), 3u);  // three slots: (round 1, sample 0), (2, 0), (1, 1)
  EXPECT_EQ(found.candidates[0].round, 1);
  EXPECT_EQ(found.candidates[0].sample, 0);
  EXPECT_EQ(found.candidates[0].worker, "gpt-a");
  EXPECT_EQ(found.candidates[1].round, 2);
  EXPECT_EQ(found.candidates[1].worker, "7");
  EXPECT_EQ(found.candidates[2].sample, 1);
  ASSERT_EQ(found.problems.size(), 3u);
  EXPECT_NE(found.problems[0].find("c.jsonl:4: field 'round' must be a non-negative integer"),
            std::string::npos);
  EXPECT_NE(found.problems[1].find("c.jsonl:5: field 'sample'"), std::string::npos);
  EXPECT_NE(found.problems[2].find("c.jsonl:6: field 'worker' must be a string or an integer"),
            std::string::npos);
}

TEST(CandidateRounds, SameSlotTwiceKeepsTheLastAndSaysSo) {
  test::TempDir dir;
  const auto path = dir.path() / "c.jsonl";
  write_file(path,
             "{\"file\": \"Math/add.py\", \"predict\": \"a\", \"round\": 1}\n"
             "{\"file\": \"Math/add.py\", \"predict\": \"b\", \"round\": 1}\n");
  auto found = plan::from_path(path, "m");
  ASSERT_EQ(found.candidates.size(), 1u);
  EXPECT_EQ(found.candidates[0].source, "b");
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_NE(found.problems[0].find("Math/add round 1: 2 candidates"), std::string::npos);
}

TEST(CandidateRounds, SameSourceInTwoSamplesIsTwoCandidates) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  store::Candidate c{0, "m", "Math/add", sha256_hex("a"), "a", "x.jsonl:1"};
  const auto plain = db.add_candidate(c);
  EXPECT_EQ(db.add_candidate(c), plain);  // no round or sample: deduplicated as before
  c.sample = 0;
  const auto s0 = db.add_candidate(c);
  c.sample = 1;
  c.worker = "w1";
  const auto s1 = db.add_candidate(c);
  EXPECT_NE(s0, plain);
  EXPECT_NE(s1, s0);
  EXPECT_EQ(db.add_candidate(c), s1);
  c.round = 2;
  const auto r2 = db.add_candidate(c);
  EXPECT_NE(r2, s1);
  const auto latest = db.latest_candidates("m");
  ASSERT_EQ(latest.size(), 4u);  // one per (round, sample), ordered by round then sample
  EXPECT_FALSE(latest[0].round);
  EXPECT_FALSE(latest[0].sample);
  EXPECT_EQ(latest[1].sample, 0);
  EXPECT_EQ(latest[2].sample, 1);
  EXPECT_EQ(latest[2].worker, "w1");
  EXPECT_EQ(latest[3].round, 2);
}

/// A schema-4 database as kbx of schema 4 made it (candidates unique by method, task, sha256),
/// with one candidate and one result of it.
const char* kSchema4 = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES('schema_version', '4');
CREATE TABLE candidates(
  id INTEGER PRIMARY KEY, method TEXT NOT NULL, task TEXT NOT NULL, sha256 TEXT NOT NULL,
  source TEXT NOT NULL, origin TEXT, imported_at TEXT NOT NULL,
  UNIQUE(method, task, sha256));
CREATE TABLE runs(
  id INTEGER PRIMARY KEY, run_key TEXT NOT NULL, method TEXT NOT NULL, device TEXT NOT NULL,
  track TEXT NOT NULL, seed INTEGER NOT NULL, started_at TEXT NOT NULL, finished_at TEXT,
  settings TEXT, environment TEXT, kbx_version TEXT);
CREATE TABLE results(
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
  candidate_id INTEGER NOT NULL REFERENCES candidates(id), method TEXT NOT NULL,
  task TEXT NOT NULL, category TEXT NOT NULL, status TEXT NOT NULL, detail TEXT,
  error_ratio REAL, cases_total INTEGER, cases_passed INTEGER, speedup REAL,
  triton_launches INTEGER, wall_s REAL, overhead_s REAL, stdout_bytes INTEGER,
  created_at TEXT NOT NULL, kernel_share REAL, UNIQUE(run_id, candidate_id));
CREATE TABLE case_results(
  result_id INTEGER NOT NULL REFERENCES results(id), name TEXT NOT NULL, tier TEXT,
  status TEXT NOT NULL, error_ratio REAL, detail TEXT, cand_ms REAL, eager_ms REAL,
  flops REAL, bytes REAL, dtype TEXT, timing_source TEXT, cand_event_ms REAL,
  eager_event_ms REAL, kernel_share REAL, timing_flags TEXT, compile_ms REAL,
  PRIMARY KEY(result_id, name));
CREATE TABLE samples(
  result_id INTEGER NOT NULL REFERENCES results(id), case_name TEXT NOT NULL,
  who TEXT NOT NULL, idx INTEGER NOT NULL, ms REAL NOT NULL);
CREATE TABLE attempts(
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
  candidate_id INTEGER NOT NULL REFERENCES candidates(id), started_at TEXT NOT NULL,
  pid INTEGER NOT NULL, ended_at TEXT, outcome TEXT);
CREATE TABLE result_grades(
  result_id INTEGER PRIMARY KEY REFERENCES results(id),
  strict TEXT NOT NULL, core TEXT NOT NULL, kbx TEXT NOT NULL,
  strict_values INTEGER NOT NULL, core_values INTEGER NOT NULL, kbx_values INTEGER NOT NULL,
  glue_share REAL);
CREATE TABLE case_grades(
  result_id INTEGER NOT NULL REFERENCES results(id), name TEXT NOT NULL,
  in_kbx INTEGER NOT NULL, values_ok INTEGER NOT NULL, glue_share REAL,
  PRIMARY KEY(result_id, name));
CREATE TABLE calibration(
  id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, device TEXT NOT NULL, gpu TEXT,
  measured_at TEXT NOT NULL, peaks TEXT NOT NULL, environment TEXT);
CREATE TABLE baselines(
  fingerprint TEXT NOT NULL, task TEXT NOT NULL, task_hash TEXT NOT NULL, kind TEXT NOT NULL,
  case_name TEXT NOT NULL, samples TEXT NOT NULL, measured_at TEXT NOT NULL,
  PRIMARY KEY(fingerprint, task_hash, kind, case_name));
INSERT INTO candidates VALUES(7, 'm', 'Math/add', 'abc', 'src', 'a.py', '2026-01-01T00:00:00Z');
INSERT INTO runs(id, run_key, method, device, track, seed, started_at)
  VALUES(1, 'k', 'm', 'cuda', 'triton', 1, '2026-01-01T00:00:00Z');
INSERT INTO results(id, run_id, candidate_id, method, task, category, status, speedup, created_at)
  VALUES(1, 1, 7, 'm', 'Math/add', 'Math', 'passed', 1.5, '2026-01-01T00:00:00Z');
INSERT INTO result_grades VALUES(1, 'passed', 'passed', 'passed', 1, 1, 1, NULL);
)sql";

TEST(CandidateRounds, SchemaVersion4IsMigratedKeepingCandidateIds) {
  test::TempDir dir;
  const auto path = dir.path() / "v4.db";
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, kSchema4, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  }
  store::Store db(path);
  {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db.handle(), "SELECT value FROM meta WHERE key='schema_version'", -1, &st,
                       nullptr);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))),
              std::to_string(store::kSchemaVersion));
    sqlite3_finalize(st);
  }
  EXPECT_EQ(store::kSchemaVersion, 6);
  auto latest = db.latest_candidates("m");
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0].id, 7);  // results still point at it
  EXPECT_EQ(latest[0].origin, "a.py");
  EXPECT_FALSE(latest[0].round);
  auto rows = db.results("m", std::nullopt);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].candidate_id, 7);
  // the old key still deduplicates; a sample of the same source is a candidate of its own
  store::Candidate same{0, "m", "Math/add", "abc", "src", "b.py"};
  EXPECT_EQ(db.add_candidate(same), 7);
  same.sample = 3;
  EXPECT_NE(db.add_candidate(same), 7);
  // foreign keys are on again and the results' reference to candidates holds
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.handle(), "PRAGMA foreign_key_check", -1, &st, nullptr);
  EXPECT_EQ(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
  sqlite3_prepare_v2(db.handle(), "PRAGMA foreign_keys", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1);
  sqlite3_finalize(st);
}

}  // namespace
}  // namespace kbx
