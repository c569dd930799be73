#include "store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "common/error.h"
#include "common/util.h"
#include "plan/candidates.h"
#include "store/baselines.h"
#include "store/calibration.h"
#include "test_util.h"

namespace kbx {
namespace {
namespace fs = std::filesystem;

store::Result result_for(std::int64_t run, std::int64_t cand, const std::string& task) {
  store::Result r;
  r.run_id = run;
  r.candidate_id = cand;
  r.method = "m";
  r.task = task;
  r.category = task.substr(0, task.find('/'));
  r.status = "passed";
  r.speedup = 1.5;
  store::CaseResult c;
  c.name = "perf";
  c.tier = "full";
  c.status = "passed";
  c.cand_samples = {1.0, 2.0, 3.0};
  c.eager_samples = {3.0, 3.0};
  r.cases.push_back(c);
  return r;
}

/// A run of method "m" on cuda, as the tests of timing columns need.
std::int64_t add_cuda_run(store::Store& db) {
  store::Run r;
  r.run_key = "key";
  r.method = "m";
  r.device = "cuda";
  r.track = "triton";
  return db.add_run(r);
}

TEST(Store, CandidatesDeduplicateAndLatestWins) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  store::Candidate c{0, "m", "Math/add", sha256_hex("a"), "a", "x"};
  auto id1 = db.add_candidate(c);
  EXPECT_EQ(db.add_candidate(c), id1);
  c.source = "b";
  c.sha256 = sha256_hex("b");
  auto id2 = db.add_candidate(c);
  EXPECT_NE(id1, id2);
  auto latest = db.latest_candidates("m");
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0].source, "b");
}

TEST(Store, ResumeSkipsFinishedJobsAfterReopen) {
  test::TempDir dir;
  const auto path = dir.path() / "k.db";
  std::int64_t run_id, c1, c2;
  {
    store::Store db(path);
    c1 = db.add_candidate({0, "m", "Math/add", sha256_hex("1"), "1", ""});
    c2 = db.add_candidate({0, "m", "Math/sub", sha256_hex("2"), "2", ""});
    store::Run r;
    r.run_key = "key";
    r.method = "m";
    r.device = "cpu";
    r.track = "triton";
    r.seed = 42;
    run_id = db.add_run(r);
    db.add_result(result_for(run_id, c1, "Math/add"));
    // no finish_run: as if kbx were killed here
  }
  store::Store db(path);
  auto run = db.find_run("key");
  ASSERT_TRUE(run);
  EXPECT_EQ(run->id, run_id);
  EXPECT_EQ(run->seed, 42u);
  EXPECT_TRUE(run->finished_at.empty());
  EXPECT_TRUE(db.has_result(run_id, c1));
  EXPECT_FALSE(db.has_result(run_id, c2));
  auto rows = db.results("m", std::nullopt);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].cases.size(), 1u);
  EXPECT_EQ(rows[0].speedup.value(), 1.5);
  EXPECT_EQ(db.add_result(result_for(run_id, c1, "Math/add")), 0);  // one verdict per job, kept
  EXPECT_EQ(db.results("m", run_id).size(), 1u);
}

TEST(Store, RefusesOtherSchemaVersion) {
  test::TempDir dir;
  const auto path = dir.path() / "k.db";
  { store::Store db(path); }
  sqlite3* raw;
  sqlite3_open(path.c_str(), &raw);
  sqlite3_exec(raw, "UPDATE meta SET value='99' WHERE key='schema_version'", nullptr, nullptr,
               nullptr);
  sqlite3_close(raw);
  EXPECT_THROW(store::Store db(path), Error);
}

TEST(Plan, JsonlSkipsMalformedLinesWithClearProblems) {
  test::TempDir dir;
  const auto path = dir.path() / "c.jsonl";
  write_file(path,
             "{\"file\": \"Math/add.py\", \"predict\": \"def add(a, b): return a\"}\n"
             "{not json\n"
             "{\"file\": \"add.py\", \"predict\": \"x\"}\n"
             "{\"predict\": \"x\"}\n");
  auto found = plan::from_jsonl(path, "m");
  ASSERT_EQ(found.candidates.size(), 1u);
  EXPECT_EQ(found.candidates[0].task, "Math/add");
  ASSERT_EQ(found.problems.size(), 3u);
  EXPECT_NE(found.problems[0].find("c.jsonl:2: malformed JSON"), std::string::npos);
  EXPECT_NE(found.problems[1].find("c.jsonl:3"), std::string::npos);
  EXPECT_NE(found.problems[2].find("c.jsonl:4"), std::string::npos);
}

TEST(Plan, DirectoryFindsCategoryNameFiles) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "Math");
  write_file(dir.path() / "Math" / "add.py", "x");
  write_file(dir.path() / "Math" / "bad.py", "\xFF\xFE");
  write_file(dir.path() / "stray.py", "x");
  auto found = plan::from_directory(dir.path(), "m");
  EXPECT_EQ(found.candidates.size(), 2u);  // the non-UTF-8 one is kept and judged bad_input
  EXPECT_EQ(found.problems.size(), 2u);
  try {
    plan::from_path(dir.path() / "nope", "m");
    ADD_FAILURE() << "a missing --candidates path must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no such file or folder"), std::string::npos);
  }
}

TEST(Plan, RunKeyDependsOnCandidatesAndSettings) {
  std::vector<store::Candidate> a = {{0, "m", "Math/add", "h1", "", ""}};
  std::vector<store::Candidate> b = {{0, "m", "Math/add", "h2", "", ""}};
  EXPECT_EQ(plan::run_key("m", "cpu", "triton", {"edge"}, a),
            plan::run_key("m", "cpu", "triton", {"edge"}, a));
  EXPECT_NE(plan::run_key("m", "cpu", "triton", {"edge"}, a),
            plan::run_key("m", "cpu", "triton", {"edge"}, b));
  EXPECT_NE(plan::run_key("m", "cpu", "triton", {"edge"}, a),
            plan::run_key("m", "cuda", "triton", {"edge"}, a));
}

TEST(Plan, RunKeyOfAShardIsItsOwnAndAWholeRunKeepsItsKey) {
  std::vector<store::Candidate> a = {{0, "m", "Math/add", "h1", "", ""}};
  // the key of a whole run is the one kbx computed before shards existed: old runs resume
  EXPECT_EQ(plan::run_key("m", "cpu", "triton", {"edge"}, a),
            sha256_hex("m|cpu|triton|edge,|Math/add:h1").substr(0, 24));
  EXPECT_EQ(plan::run_key("m", "cpu", "triton", {"edge"}, a, ""),
            plan::run_key("m", "cpu", "triton", {"edge"}, a));
  const auto one = plan::run_key("m", "cpu", "triton", {"edge"}, a, "1/2");
  EXPECT_NE(one, plan::run_key("m", "cpu", "triton", {"edge"}, a));
  EXPECT_NE(one, plan::run_key("m", "cpu", "triton", {"edge"}, a, "2/2"));
  EXPECT_NE(one, plan::run_key("m", "cpu", "triton", {"edge"}, a, "1/3"));
  EXPECT_EQ(one, plan::run_key("m", "cpu", "triton", {"edge"}, a, "1/2"));
}

TEST(Store, TimingSamplesComeBackWithTheirCase) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  auto c1 = db.add_candidate({0, "m", "Math/add", sha256_hex("1"), "1", ""});
  auto run_id = add_cuda_run(db);
  db.add_result(result_for(run_id, c1, "Math/add"));
  auto rows = db.results("m", run_id);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].cases.size(), 1u);
  EXPECT_EQ(rows[0].cases[0].cand_samples, (std::vector<double>{1.0, 2.0, 3.0}));
  EXPECT_EQ(rows[0].cases[0].eager_samples, (std::vector<double>{3.0, 3.0}));
}

// Several results of several runs, each case with samples of its own: each comes back with its
// own, in the order they were stored, whichever results are asked for (one run, or the newest).
TEST(Store, EachResultGetsItsOwnSamplesInOrder) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  const auto add = db.add_candidate({0, "m", "Math/add", sha256_hex("1"), "1", ""});
  const auto sub = db.add_candidate({0, "m", "Math/sub", sha256_hex("2"), "2", ""});
  const auto first_run = add_cuda_run(db), second_run = add_cuda_run(db);
  auto with = [](store::Result r, std::vector<double> cand, std::vector<double> host) {
    r.cases[0].cand_samples = std::move(cand);
    r.cases[0].cand_host_samples = std::move(host);
    store::CaseResult other = r.cases[0];
    other.name = "another";
    other.cand_samples = {r.cases[0].cand_samples.back() * 10};
    r.cases.push_back(other);
    return r;
  };
  db.add_result(with(result_for(first_run, add, "Math/add"), {9, 1, 5}, {0.5, 0.25, 0.125}));
  db.add_result(with(result_for(first_run, sub, "Math/sub"), {4, 3}, {0.1, 0.2}));
  db.add_result(with(result_for(second_run, add, "Math/add"), {7}, {0.7}));
  const auto first = db.results("m", first_run);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].cases[0].cand_samples, (std::vector<double>{9, 1, 5}));
  EXPECT_EQ(first[0].cases[0].cand_host_samples, (std::vector<double>{0.5, 0.25, 0.125}));
  EXPECT_EQ(first[0].cases[1].cand_samples, (std::vector<double>{50}));
  EXPECT_EQ(first[1].cases[0].cand_samples, (std::vector<double>{4, 3}));
  EXPECT_EQ(first[1].cases[1].cand_samples, (std::vector<double>{30}));
  EXPECT_EQ(first[1].cases[0].eager_samples, (std::vector<double>{3.0, 3.0}));
  const auto newest = db.results("m", std::nullopt);  // add from the second run, sub from the first
  ASSERT_EQ(newest.size(), 2u);
  EXPECT_EQ(newest[0].cases[0].cand_samples, (std::vector<double>{7}));
  EXPECT_EQ(newest[0].cases[1].cand_samples, (std::vector<double>{70}));
  EXPECT_EQ(newest[1].cases[0].cand_samples, (std::vector<double>{4, 3}));
}

TEST(Store, SchemaVersion1IsMigrated) {
  test::TempDir dir;
  const auto path = dir.path() / "old.db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const char* v1 = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES('schema_version', '1');
CREATE TABLE results(
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, candidate_id INTEGER NOT NULL,
  method TEXT NOT NULL, task TEXT NOT NULL, category TEXT NOT NULL, status TEXT NOT NULL,
  detail TEXT, error_ratio REAL, cases_total INTEGER, cases_passed INTEGER, speedup REAL,
  triton_launches INTEGER, wall_s REAL, overhead_s REAL, stdout_bytes INTEGER,
  created_at TEXT NOT NULL, UNIQUE(run_id, candidate_id));
CREATE TABLE case_results(
  result_id INTEGER NOT NULL, name TEXT NOT NULL, tier TEXT, status TEXT NOT NULL,
  error_ratio REAL, detail TEXT, cand_ms REAL, eager_ms REAL, flops REAL, bytes REAL,
  PRIMARY KEY(result_id, name));
)sql";
    ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  store::Store db(path);
  auto c1 = db.add_candidate({0, "m", "Math/add", sha256_hex("1"), "1", ""});
  auto run_id = add_cuda_run(db);
  auto res = result_for(run_id, c1, "Math/add");
  res.kernel_share = 0.97;
  res.cases[0].timing_source = "probe";
  res.cases[0].kernel_share = 0.97;
  res.cases[0].cand_event_samples = {1.1, 2.1};
  res.cases[0].cand_host_samples = {0.03, 0.04, 0.05};
  db.add_result(res);
  auto rows = db.results("m", run_id);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kernel_share, 0.97);
  EXPECT_EQ(rows[0].cases[0].timing_source, "probe");
  EXPECT_EQ(rows[0].cases[0].cand_event_samples, (std::vector<double>{1.1, 2.1}));
  EXPECT_EQ(rows[0].cases[0].cand_host_samples, (std::vector<double>{0.03, 0.04, 0.05}));
}

/// The tables of a schema-3 database as kbx of schema 3 made them, calibration and baselines
/// included (that kbx created those two on their first write, outside the versioned schema).
const char* kSchema3 = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES('schema_version', '3');
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
)sql";

/// Writes a schema-3 database at path, with `extra` SQL run after its tables.
void write_schema3(const fs::path& path, const char* extra) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, kSchema3, nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, extra, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

/// The schema version a database records.
std::string schema_version(store::Store& db) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.handle(), "SELECT value FROM meta WHERE key='schema_version'", -1, &st,
                     nullptr);
  std::string v = sqlite3_step(st) == SQLITE_ROW
                      ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0))
                      : "";
  sqlite3_finalize(st);
  return v;
}

TEST(Store, SchemaVersion3KeepsItsCalibrationAndBaselines) {
  test::TempDir dir;
  const auto path = dir.path() / "v3.db";
  write_schema3(path, R"sql(
CREATE TABLE calibration(
  id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, device TEXT NOT NULL, gpu TEXT,
  measured_at TEXT NOT NULL, peaks TEXT NOT NULL, environment TEXT);
CREATE INDEX calibration_fingerprint ON calibration(fingerprint);
INSERT INTO calibration(fingerprint, device, gpu, measured_at, peaks, environment)
  VALUES('fp1', 'cuda', 'NVIDIA H200', '2026-01-01T00:00:00Z', '{"copy_bw": 4.0e12}', '{}');
CREATE TABLE baselines(fingerprint TEXT NOT NULL, task TEXT NOT NULL, task_hash TEXT NOT NULL,
  kind TEXT NOT NULL, case_name TEXT NOT NULL, samples TEXT NOT NULL, measured_at TEXT NOT NULL,
  PRIMARY KEY(fingerprint, task_hash, kind, case_name));
INSERT INTO baselines VALUES('fp1', 'Math/add', 'h1', 'compile', 'perf', '[1.5, 2.5]',
  '2026-01-01T00:00:00Z');
)sql");
  store::Store db(path);
  EXPECT_EQ(schema_version(db), std::to_string(store::kSchemaVersion));
  auto cal = store::latest_calibration(db, "fp1");
  ASSERT_TRUE(cal);
  EXPECT_EQ(cal->gpu, "NVIDIA H200");
  EXPECT_EQ(cal->peaks.at("copy_bw"), 4.0e12);
  auto samples = store::cached_baseline(db, "fp1", "Math/add", "h1", "compile");
  EXPECT_EQ(samples["perf"], (std::vector<double>{1.5, 2.5}));
  // and both take new rows
  store::Calibration c;
  c.fingerprint = "fp2";
  c.device = "cpu";
  c.peaks = {{"copy_bw", 1e10}};
  EXPECT_GT(store::save_calibration(db, c), cal->id);
  store::save_baseline(db, "fp2", "Math/add", "h1", "compile", {{"perf", {3.0}}});
  EXPECT_EQ(store::cached_baseline(db, "fp2", "Math/add", "h1", "compile").size(), 1u);
}

TEST(Store, SchemaVersion3WithoutCalibrationGetsTheTables) {
  test::TempDir dir;
  const auto path = dir.path() / "v3.db";
  write_schema3(path, "");
  {
    store::Store db(path);
    EXPECT_EQ(schema_version(db), std::to_string(store::kSchemaVersion));
    EXPECT_FALSE(store::latest_calibration(db, "fp1"));
    EXPECT_TRUE(store::cached_baseline(db, "fp1", "Math/add", "h1", "compile").empty());
  }
  // the tables are there before any calibration or baseline is written
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw,
                     "SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name IN "
                     "('calibration', 'baselines')",
                     -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 2);
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

}  // namespace
}  // namespace kbx
