#include "store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "common/error.h"
#include "common/util.h"
#include "plan/candidates.h"
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

}  // namespace
}  // namespace kbx
