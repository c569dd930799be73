#include "store/merge.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "common/error.h"
#include "common/util.h"
#include "store/baselines.h"
#include "store/calibration.h"
#include "store/lock.h"
#include "store/store.h"
#include "test_util.h"

namespace kbx {
namespace {
namespace fs = std::filesystem;

const std::vector<std::string> kTasks = {"Math/add", "Math/abs", "Activation/relu"};

store::Candidate candidate(const std::string& task) {
  return {0, "expert", task, sha256_hex(task), "def f(): pass  # " + task, "solutions/" + task};
}

/// A job's verdict with one timed case, its samples and levels.
store::Result verdict(std::int64_t run, std::int64_t cand, const std::string& task,
                      const std::string& status) {
  store::Result r;
  r.run_id = run;
  r.candidate_id = cand;
  r.method = "expert";
  r.task = task;
  r.category = task.substr(0, task.find('/'));
  r.status = status;
  r.cases_total = 1;
  r.cases_passed = status == "passed";
  r.speedup = 1.25;
  r.strict = {status, status == "passed"};
  r.core = r.kbx = {"passed", true};
  store::CaseResult c;
  c.name = "full_0";
  c.tier = "full";
  c.status = status;
  c.cand_ms = 2.0;
  c.eager_ms = 2.5;
  c.cand_samples = {2.0, 2.1, 1.9};
  c.eager_samples = {2.5, 2.5};
  c.in_kbx = true;
  r.cases.push_back(c);
  return r;
}

/// Adds a sharded run as kbx eval does: every candidate stored (in the given order), a run of
/// the shard's key, a verdict for each of the shard's tasks (task -> status).
void add_shard(store::Store& db, const std::string& shard, const std::vector<std::string>& order,
               const std::map<std::string, std::string>& verdicts) {
  std::map<std::string, std::int64_t> id;
  for (const auto& t : order) id[t] = db.add_candidate(candidate(t));
  store::Run run;
  run.run_key = "key-" + shard;
  run.method = "expert";
  run.device = "cpu";
  run.track = "triton";
  run.seed = 42;
  run.settings_json = R"({"shard": ")" + shard + R"("})";
  const auto run_id = db.add_run(run);
  for (const auto& [task, status] : verdicts) {
    db.begin_attempt(run_id, id.at(task));
    db.add_result(verdict(run_id, id.at(task), task, status));
  }
  db.finish_run(run_id);
}

/// What kbx results shows, as comparable text: method, task, status, levels, cases and samples.
std::string shown(const fs::path& path) {
  store::Store db(path);
  std::string out;
  for (const auto& r : db.results("", std::nullopt)) {
    out += r.method + " " + r.task + " " + r.status + " " + r.core.status + " " +
           std::to_string(r.speedup.value_or(0)) + "\n";
    for (const auto& c : r.cases) {
      out += "  " + c.name + " " + c.status + " " + std::to_string(c.in_kbx) + " " +
             std::to_string(c.cand_samples.size()) + " " + std::to_string(c.eager_samples.size()) +
             "\n";
    }
  }
  return out;
}

std::int64_t rows(const fs::path& path, const std::string& sql) {
  store::Store db(path);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &st, nullptr);
  std::int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return n;
}

void sql(const fs::path& path, const std::string& text) {
  store::Store db(path);
  ASSERT_EQ(sqlite3_exec(db.handle(), text.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
}

/// The message of the Error `f` throws ("" when it throws none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// Two shard databases (shard 1/2: Math/add and Activation/relu; 2/2: Math/abs, candidates
/// stored in another order so their ids differ) and one database holding both runs.
struct Shards {
  test::TempDir dir;
  fs::path a = dir.path() / "shard-1.db", b = dir.path() / "shard-2.db";
  fs::path one = dir.path() / "one.db", out = dir.path() / "all.db";
  Shards() {
    const std::map<std::string, std::string> first = {{"Math/add", "passed"},
                                                      {"Activation/relu", "passed"}};
    const std::map<std::string, std::string> second = {{"Math/abs", "incorrect"}};
    const std::vector<std::string> reversed(kTasks.rbegin(), kTasks.rend());
    {
      store::Store db(a);
      add_shard(db, "1/2", kTasks, first);
    }
    {
      store::Store db(b);
      db.add_candidate(candidate("Math/only_here"));
      add_shard(db, "2/2", reversed, second);
    }
    store::Store db(one);
    add_shard(db, "1/2", kTasks, first);
    db.add_candidate(candidate("Math/only_here"));
    add_shard(db, "2/2", reversed, second);
  }
};

TEST(Merge, TwoShardsGiveTheResultsOfOneDatabase) {
  Shards s;
  const auto m = store::merge_databases({s.a, s.b}, s.out, false);
  EXPECT_EQ(m.inputs, 2);
  EXPECT_EQ(m.runs, 2);
  EXPECT_EQ(m.candidates, 4);  // deduplicated by (method, task, sha256)
  EXPECT_EQ(m.results, 3);
  EXPECT_EQ(m.shared_runs, 0);
  EXPECT_EQ(shown(s.out), shown(s.one));
  EXPECT_NE(shown(s.out).find("Math/abs incorrect"), std::string::npos) << shown(s.out);
  // every result points at the candidate of its own task, and at a run of the output
  EXPECT_EQ(rows(s.out,
                 "SELECT COUNT(*) FROM results r JOIN candidates c ON c.id = "
                 "r.candidate_id AND c.task = r.task JOIN runs u ON u.id = r.run_id"),
            3);
  EXPECT_EQ(rows(s.out, "SELECT COUNT(*) FROM samples"), 15);
  EXPECT_EQ(rows(s.out,
                 "SELECT COUNT(*) FROM attempts a JOIN results r ON r.run_id = a.run_id "
                 "AND r.candidate_id = a.candidate_id"),
            3);
  EXPECT_EQ(rows(s.out, "SELECT COUNT(*) FROM case_grades"), 3);
  EXPECT_EQ(rows(s.out,
                 "SELECT COUNT(*) FROM runs WHERE settings LIKE '%2/2%' AND finished_at "
                 "IS NOT NULL"),
            1);
  EXPECT_FALSE(fs::exists(s.out.string() + "-wal"));
}

TEST(Merge, AnOutputNamedWithoutItsFolderIsWrittenInTheCurrentOne) {
  Shards s;
  const fs::path before = fs::current_path();
  fs::current_path(s.dir.path());
  std::string error;
  try {
    store::merge_databases({"shard-1.db", "shard-2.db"}, "all-here.db", false);
  } catch (const Error& e) {
    error = e.what();  // session 19: "-o all-here.db: folder  does not exist"
  }
  fs::current_path(before);
  EXPECT_EQ(error, "");
  EXPECT_EQ(shown(s.dir.path() / "all-here.db"), shown(s.one));
}

TEST(Merge, CalibrationsAndBaselinesKeepTheNewest) {
  Shards s;
  store::Calibration cal;
  cal.fingerprint = "fp";
  cal.device = "cuda";
  cal.gpu = "H200";
  cal.peaks = {{"copy_bw", 4e12}};
  for (const auto& [path, when, ms] : {std::tuple{s.a, "2026-01-01T00:00:00Z", 1.0},
                                       std::tuple{s.b, "2026-02-01T00:00:00Z", 2.0}}) {
    store::Store db(path);
    cal.measured_at = when;
    store::save_calibration(db, cal);
    store::save_baseline(db, "fp", "Math/add", "h1", "compile", {{"full_0", {ms}}});
    sql(path, std::string("UPDATE baselines SET measured_at='") + when + "'");
  }
  store::merge_databases({s.b, s.a}, s.out, false);  // the newer input first
  EXPECT_EQ(rows(s.out, "SELECT COUNT(*) FROM calibration"), 2);
  store::Store db(s.out);
  EXPECT_EQ(store::latest_calibration(db, "fp")->measured_at, "2026-02-01T00:00:00Z");
  EXPECT_EQ(store::cached_baseline(db, "fp", "Math/add", "h1", "compile").at("full_0"),
            std::vector<double>{2.0});
}

TEST(Merge, ACopyOfARunIsOneRunAndItsVerdictReplacesAHarnessError) {
  Shards s;
  const fs::path copy = s.dir.path() / "copy.db";
  fs::copy_file(s.a, copy);
  sql(s.a, "UPDATE results SET status='harness_error' WHERE task='Math/add'");
  const auto m = store::merge_databases({s.a, copy}, s.out, false);
  EXPECT_EQ(m.runs, 1);
  EXPECT_EQ(m.shared_runs, 1);
  EXPECT_EQ(m.results, 2);
  EXPECT_NE(shown(s.out).find("Math/add passed"), std::string::npos) << shown(s.out);
  EXPECT_EQ(rows(s.out, "SELECT COUNT(*) FROM samples"), 10);  // the replaced row's are gone
  EXPECT_EQ(rows(s.out, "SELECT COUNT(*) FROM attempts"), 2);  // copies of attempts kept once
}

TEST(Merge, DifferentVerdictsForOneJobAreConflictsNamed) {
  Shards s;
  const fs::path again = s.dir.path() / "again.db";
  {
    store::Store db(again);  // shard 1/2 run again elsewhere: same key, another verdict
    add_shard(db, "1/2", kTasks, {{"Math/add", "incorrect"}, {"Activation/relu", "passed"}});
  }
  const std::string msg = error_of([&] {
    store::merge_databases({s.a, s.b, again}, s.out, false);
  });
  EXPECT_NE(msg.find("1 job(s) have different verdicts"), std::string::npos) << msg;
  EXPECT_NE(msg.find("key-1/2 (shard 1/2): Math/add of method expert: passed in " + s.a.string() +
                     ", incorrect in " + again.string()),
            std::string::npos)
      << msg;
  EXPECT_FALSE(fs::exists(s.out));
  for (const auto& e : fs::directory_iterator(s.dir.path())) {
    EXPECT_EQ(e.path().filename().string().find(".all.db.merging"), std::string::npos);
  }
}

TEST(Merge, RefusesOtherSchemaVersionsNamingTheFile) {
  Shards s;
  sql(s.b, "UPDATE meta SET value='7' WHERE key='schema_version'");
  std::string msg = error_of([&] { store::merge_databases({s.a, s.b}, s.out, false); });
  EXPECT_NE(msg.find(s.b.string() + ": schema version 7, this kbx reads 6"), std::string::npos)
      << msg;
  {
    sqlite3* db = nullptr;  // an older database: migrate it first
    sqlite3_open(s.b.c_str(), &db);
    sqlite3_exec(db, "UPDATE meta SET value='4' WHERE key='schema_version'", nullptr, nullptr,
                 nullptr);
    sqlite3_close(db);
  }
  msg = error_of([&] { store::merge_databases({s.a, s.b}, s.out, false); });
  EXPECT_NE(msg.find(s.b.string() + ": schema version 4, kbx merge needs 6"), std::string::npos)
      << msg;
  write_file(s.b, "not a database");
  msg = error_of([&] { store::merge_databases({s.a, s.b}, s.out, false); });
  EXPECT_NE(msg.find(s.b.string() + ": not a kbx results database"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(s.out));
}

TEST(Merge, RefusesAnExistingOutputUnlessForcedAndBadInputs) {
  Shards s;
  write_file(s.out, "old");
  EXPECT_NE(error_of([&] {
              store::merge_databases({s.a, s.b}, s.out, false);
            }).find("--force"),
            std::string::npos);
  EXPECT_EQ(read_file(s.out), "old");
  store::merge_databases({s.a, s.b}, s.out, true);
  EXPECT_EQ(shown(s.out), shown(s.one));
  EXPECT_NE(error_of([&] {
              store::merge_databases({s.a, s.b}, s.a, true);
            }).find("is one of the inputs"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              store::merge_databases({s.a, s.a}, s.dir.path() / "x.db", false);
            }).find("given twice"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              store::merge_databases({s.dir.path() / "missing.db"}, s.dir.path() / "x.db", false);
            }).find("missing.db: no such database"),
            std::string::npos);
}

TEST(Merge, RefusesAnInputAKbxEvalIsWriting) {
  Shards s;
  std::string holder;
  auto lock = store::WriterLock::try_take(s.b, "expert", &holder);
  ASSERT_TRUE(lock);
  const std::string msg = error_of([&] { store::merge_databases({s.a, s.b}, s.out, false); });
  EXPECT_NE(msg.find(s.b.string() + " is being written by a kbx eval"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kbx

namespace kbx {
namespace {

TEST(Merge, SamplesOfOneSourceStayApart) {
  // Schema 5: two samples of a generating method with the same source are two candidates, in
  // the merged database too, each with its own verdict.
  test::TempDir dir;
  const fs::path a = dir.path() / "a.db", b = dir.path() / "b.db", out = dir.path() / "all.db";
  for (const auto& [path, sample, status] :
       {std::tuple{a, 0, std::string("passed")}, std::tuple{b, 1, std::string("incorrect")}}) {
    store::Store db(path);
    store::Candidate c = candidate("Math/add");
    c.sample = sample;
    const auto id = db.add_candidate(c);
    store::Run run;
    run.run_key = "key-" + std::to_string(sample);
    run.method = "expert";
    run.device = "cpu";
    run.track = "triton";
    run.seed = 42;
    const auto run_id = db.add_run(run);
    db.add_result(verdict(run_id, id, "Math/add", status));
    db.finish_run(run_id);
  }
  const auto m = store::merge_databases({a, b}, out, false);
  EXPECT_EQ(m.candidates, 2);
  EXPECT_EQ(m.results, 2);
  EXPECT_EQ(rows(out,
                 "SELECT COUNT(*) FROM results r JOIN candidates c ON c.id = r.candidate_id "
                 "WHERE (c.sample = 0 AND r.status = 'passed') OR (c.sample = 1 AND "
                 "r.status = 'incorrect')"),
            2);
}

}  // namespace
}  // namespace kbx
