// A method's results are all of its runs (issue 19): the newest verdict of each task across the
// method's runs, which run each row comes from, and rows from another environment marked.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/util.h"
#include "report/table.h"
#include "store/calibration.h"
#include "store/store.h"
#include "test_util.h"

namespace kbx {
namespace {

using nlohmann::json;

/// A database with three runs of method "m" (by category, then a repeat of one task after a
/// fix) and one run of method "other".
struct ThreeRuns {
  test::TempDir dir;
  store::Store db{dir.path() / "k.db"};
  std::int64_t run1 = 0, run2 = 0, run3 = 0, other = 0;

  std::int64_t run(const std::string& method, const std::string& torch) {
    store::Run r;
    r.run_key = method + torch + std::to_string(db.runs().size());
    r.method = method;
    r.device = "cuda";
    r.track = "triton";
    const auto id = db.add_run(r);
    json env = {{"gpu", "NVIDIA H200"}, {"gpu_count", 1}, {"driver", "580.1"},
                {"cuda", "13.0"},       {"torch", torch}, {"triton", "3.6.0"}};
    db.set_run_environment(id, env.dump());
    return id;
  }

  void result(std::int64_t run_id, const std::string& method, const std::string& task,
              const std::string& status, const std::string& source) {
    const auto cand = db.add_candidate({0, method, task, sha256_hex(source), source, "x.py"});
    store::Result r;
    r.run_id = run_id;
    r.candidate_id = cand;
    r.method = method;
    r.task = task;
    r.category = task.substr(0, task.find('/'));
    r.status = status;
    r.strict = r.core = r.kbx = {status, status == "passed"};
    db.add_result(r);
  }

  ThreeRuns() {
    run1 = run("m", "2.11.0");
    result(run1, "m", "Activation/gelu", "passed", "g1");
    result(run1, "m", "Activation/relu", "numerical_mismatch", "r1");
    run2 = run("m", "2.11.0");
    result(run2, "m", "Reduce/sum", "passed", "s1");
    other = run("other", "2.11.0");
    result(other, "other", "Activation/gelu", "passed", "og");
    run3 = run("m", "2.12.0");  // the fixed relu, on a newer torch
    result(run3, "m", "Activation/relu", "passed", "r2");
  }

  report::RunCalibrations calibrations() {
    report::RunCalibrations cals;
    for (const auto& r : db.runs()) cals[r.id] = store::calibration_for_run(db, r);
    return cals;
  }
};

TEST(ResultsView, NewestVerdictOfEachTaskAcrossAMethodsRuns) {
  ThreeRuns t;
  const auto rows = t.db.results("m", std::nullopt);
  ASSERT_EQ(rows.size(), 3u);  // gelu (run 1), relu (run 3, not run 1's), sum (run 2)
  EXPECT_EQ(rows[0].task, "Activation/gelu");
  EXPECT_EQ(rows[0].run_id, t.run1);
  EXPECT_EQ(rows[1].task, "Activation/relu");
  EXPECT_EQ(rows[1].run_id, t.run3);
  EXPECT_EQ(rows[1].status, "passed");
  EXPECT_EQ(rows[2].task, "Reduce/sum");
  EXPECT_EQ(rows[2].run_id, t.run2);
  // every method when none is named; --run still shows one run alone
  EXPECT_EQ(t.db.results("", std::nullopt).size(), 4u);
  const auto only_run1 = t.db.results("", t.run1);
  ASSERT_EQ(only_run1.size(), 2u);
  EXPECT_EQ(only_run1[1].status, "numerical_mismatch");
}

TEST(ResultsView, RowsFromAnotherEnvironmentAreMarked) {
  ThreeRuns t;
  const auto rows = t.db.results("m", std::nullopt);
  const auto cals = t.calibrations();
  const auto envs = report::method_environments(rows, cals);
  const auto& m = envs.at("m");
  EXPECT_EQ(m.runs, (std::vector<std::int64_t>{t.run1, t.run2, t.run3}));
  ASSERT_EQ(m.fingerprints.size(), 2u);
  EXPECT_EQ(m.main_fingerprint, cals.at(t.run1).fingerprint);  // two rows of three
  EXPECT_FALSE(report::from_other_environment(rows[0], envs, cals));
  EXPECT_TRUE(report::from_other_environment(rows[1], envs, cals));  // relu, newer torch
  EXPECT_FALSE(report::from_other_environment(rows[2], envs, cals));

  const std::string table = report::results_table(rows, cals);
  EXPECT_NE(table.find(std::to_string(t.run3) + "*"), std::string::npos) << table;
  EXPECT_NE(table.find("m: 3/3 correct"), std::string::npos) << table;  // tasks, not rows
  EXPECT_NE(table.find("span 2 environments"), std::string::npos) << table;

  const json doc = json::parse(report::results_json(rows, cals));
  EXPECT_EQ(doc["methods"]["m"]["tasks"], 3);
  EXPECT_EQ(doc["methods"]["m"]["environments"].size(), 2u);
  EXPECT_EQ(doc["results"][1]["other_environment"], true);
  EXPECT_EQ(doc["results"][0]["other_environment"], false);

  const std::string csv = report::results_csv(rows, cals);
  EXPECT_NE(csv.find(",fingerprint,other_environment\n"), std::string::npos);
  EXPECT_NE(csv.find(cals.at(t.run3).fingerprint + ",1\n"), std::string::npos) << csv;

  const std::string md = report::results_markdown(rows, "r", cals);
  EXPECT_NE(md.find("| Activation/relu | " + std::to_string(t.run3) + "* |"), std::string::npos)
      << md;
}

TEST(ResultsView, OneEnvironmentMarksNothing) {
  ThreeRuns t;
  const auto rows = t.db.results("other", std::nullopt);
  const auto cals = t.calibrations();
  const auto envs = report::method_environments(rows, cals);
  EXPECT_EQ(envs.at("other").fingerprints.size(), 1u);
  for (const auto& r : rows) EXPECT_FALSE(report::from_other_environment(r, envs, cals));
  EXPECT_EQ(report::results_table(rows, cals).find("environments"), std::string::npos);
}

/// A passed row with one timed case flagged `flags`.
store::Result timed_row(const std::string& task, const std::string& flags) {
  store::Result r;
  r.method = "m";
  r.task = task;
  r.category = "Index";
  r.status = "passed";
  r.speedup = 1.5;
  store::CaseResult c;
  c.name = "perf";
  c.timing_flags = flags;
  r.cases.push_back(c);
  return r;
}

TEST(ResultsView, SpeedupsThatFollowTheHostAreMarked) {
  const std::vector<store::Result> rows = {
      timed_row("Index/masked_select", "contended,waits_on_host,no_floor"),
      timed_row("Normalization/spectral_norm_eig", "eager_waits_on_host"),
      timed_row("Activation/gelu", "host_bound,no_floor"),  // launch-bound, queued: not marked
      timed_row("Math/add", "not_waits_on_host_really"),    // a flag is a whole word
      timed_row("LinearAlgebra/det", "launch_gaps,host_bound,no_floor"),
      timed_row("LinearAlgebra/qr", "eager_launch_gaps,no_floor")};  // a Triton QR against it
  EXPECT_TRUE(report::follows_host(rows[0]));
  EXPECT_TRUE(report::follows_host(rows[1]));
  EXPECT_FALSE(report::follows_host(rows[2]));
  EXPECT_FALSE(report::follows_host(rows[3]));
  EXPECT_TRUE(report::follows_host(rows[4]));
  EXPECT_TRUE(report::follows_host(rows[5]));

  const std::string table = report::results_table(rows);
  EXPECT_NE(table.find("1.50x~"), std::string::npos) << table;
  EXPECT_NE(table.find("~ after a speedup"), std::string::npos) << table;
  const auto gelu = table.find("Activation/gelu");
  const std::string gelu_line = table.substr(gelu, table.find('\n', gelu) - gelu);
  EXPECT_EQ(gelu_line.find('~'), std::string::npos) << gelu_line;

  const std::string md = report::results_markdown(rows, "r");
  EXPECT_NE(md.find("| 1.50x~ |"), std::string::npos) << md;
  EXPECT_NE(md.find("~ after a speedup"), std::string::npos) << md;

  const json doc = json::parse(report::results_json(rows));
  EXPECT_EQ(doc["results"][0]["follows_host"], true);
  EXPECT_EQ(doc["results"][2]["follows_host"], false);

  const std::vector<store::Result> queued = {rows[2], rows[3]};
  EXPECT_EQ(report::results_table(queued).find("~"), std::string::npos) << "no mark, no legend";
}

}  // namespace
}  // namespace kbx
