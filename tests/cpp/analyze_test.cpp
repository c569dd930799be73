// kbx analyze (issue 15) on synthetic databases built through the store API, each analysis
// against answers computed by hand: rates and speedups per method and category, the tasks no
// method solves, a rescued kernel, two GPUs with a known spread, a planted category effect.
#include "report/analyze.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/util.h"
#include "store/store.h"
#include "store/verdicts.h"
#include "test_util.h"

namespace kbx {
namespace {

/// A database of synthetic verdicts: runs on a named GPU, one result per kernel.
class SyntheticDb {
 public:
  explicit SyntheticDb(const std::filesystem::path& path) : db_(path) {}

  /// A run of method on gpu; its id.
  std::int64_t run(const std::string& method, const std::string& gpu) {
    store::Run r;
    r.run_key = method + gpu + std::to_string(++runs_);
    r.method = method;
    r.device = "cuda";
    r.track = "triton";
    const auto id = db_.add_run(r);
    db_.set_run_environment(id, nlohmann::json{{"gpu", gpu}, {"gpu_count", 1}}.dump());
    return id;
  }

  /// A kernel's verdict: its status at the strict level (core and kbx too unless given).
  void kernel(std::int64_t run_id, const std::string& method, const std::string& task,
              const std::string& status, std::optional<double> speedup,
              std::optional<std::int64_t> round = std::nullopt,
              std::optional<std::int64_t> sample = std::nullopt, std::string source = "",
              std::string core = "", std::string kbx = "") {
    if (source.empty()) {
      source = fmt_source(method, task, round, sample);
    }
    store::Candidate c{0, method, task, sha256_hex(source), source, "synthetic"};
    c.round = round;
    c.sample = sample;
    store::Result r;
    r.run_id = run_id;
    r.candidate_id = db_.add_candidate(c);
    r.method = method;
    r.task = task;
    r.category = task.substr(0, task.find('/'));
    r.status = status;
    r.speedup = speedup;
    r.strict = {status, status == "passed"};
    r.core = core.empty() ? r.strict : store::LevelVerdict{core, core == "passed"};
    r.kbx = kbx.empty() ? r.core : store::LevelVerdict{kbx, kbx == "passed"};
    db_.add_result(r);
  }

  store::Store& store() { return db_; }

 private:
  static std::string fmt_source(const std::string& method, const std::string& task,
                                std::optional<std::int64_t> round,
                                std::optional<std::int64_t> sample) {
    return method + "|" + task + "|" + std::to_string(round.value_or(-1)) + "|" +
           std::to_string(sample.value_or(-1));
  }
  store::Store db_;
  int runs_ = 0;
};

/// The analyses of the databases.
std::vector<report::Table> analyze(const std::vector<store::Store*>& dbs,
                                   report::AnalyzeOptions o = {}) {
  store::Verdicts v;
  for (auto* db : dbs) store::read_verdicts(*db, "db", v);
  return report::analyze(v, o);
}

const report::Table& table(const std::vector<report::Table>& tables, const std::string& name) {
  for (const auto& t : tables) {
    if (t.name == name) return t;
  }
  throw Error("no table " + name);
}

/// The cell in column `key` of the row whose first cells read `lead`.
const report::Cell& cell(const report::Table& t, const std::vector<std::string>& lead,
                         const std::string& key) {
  std::size_t col = 0;
  while (col < t.columns.size() && t.columns[col].key != key) ++col;
  if (col == t.columns.size()) throw Error(t.name + ": no column " + key);
  for (const auto& row : t.rows) {
    bool match = true;
    for (std::size_t i = 0; i < lead.size(); ++i) {
      const auto& c = row[i];
      const std::string text = c.value ? fmt::format("{}", *c.value) : c.text;
      match = match && text == lead[i];
    }
    if (match) return row[col];
  }
  throw Error(t.name + ": no row " + lead.front());
}

double value(const report::Table& t, const std::vector<std::string>& lead, const std::string& key) {
  const auto& c = cell(t, lead, key);
  if (!c.value) throw Error(t.name + ": " + key + " has no value");
  return *c.value;
}

/// Method m on H200: Activation (4 kernels) and Math (2), a harness fault and an older verdict.
struct MethodsFixture {
  test::TempDir dir;
  SyntheticDb db{dir.path() / "m.db"};
  MethodsFixture() {
    const auto old = db.run("m", "NVIDIA H200");
    db.kernel(old, "m", "Activation/gelu", "compile_error", std::nullopt);  // replaced below
    const auto run = db.run("m", "NVIDIA H200");
    db.kernel(run, "m", "Activation/gelu", "passed", 2.0);
    db.kernel(run, "m", "Activation/relu", "passed", 0.5);
    db.kernel(run, "m", "Activation/silu", "numerical_mismatch", 1.2, std::nullopt, std::nullopt,
              "", "passed", "passed");
    db.kernel(run, "m", "Activation/tanh", "compile_error", std::nullopt);
    db.kernel(run, "m", "Math/add", "passed", 1.6);
    db.kernel(run, "m", "Math/sub", "runtime_error", std::nullopt);
    db.kernel(run, "m", "Math/mul", "harness_error", std::nullopt);  // no verdict: left out
  }
};

TEST(Analyze, MethodsRatesSpeedupsAndFastP) {
  MethodsFixture f;
  const auto tables = analyze({&f.db.store()});
  const auto& t = table(tables, "methods");
  const std::vector<std::string> act = {"m", "NVIDIA H200", "Activation"};
  EXPECT_EQ(value(t, act, "kernels"), 4);
  EXPECT_DOUBLE_EQ(value(t, act, "compile_rate"), 0.75);
  EXPECT_DOUBLE_EQ(value(t, act, "correct_strict"), 0.5);
  EXPECT_DOUBLE_EQ(value(t, act, "correct_core"), 0.75);
  EXPECT_DOUBLE_EQ(value(t, act, "correct_kbx"), 0.75);
  EXPECT_EQ(value(t, act, "timed_correct"), 2);
  EXPECT_NEAR(value(t, act, "geomean_speedup"), 1.0, 1e-12);  // sqrt(2.0 * 0.5)
  EXPECT_DOUBLE_EQ(value(t, act, "slower_than_eager"), 0.5);
  EXPECT_DOUBLE_EQ(value(t, act, "fast_0"), 0.5);
  EXPECT_DOUBLE_EQ(value(t, act, "fast_1"), 0.25);
  EXPECT_DOUBLE_EQ(value(t, act, "fast_1.5"), 0.25);
  EXPECT_DOUBLE_EQ(value(t, act, "fast_2"), 0);  // 2.0 is not > 2
  const std::vector<std::string> all = {"m", "NVIDIA H200", "all"};
  EXPECT_EQ(value(t, all, "tasks"), 6);
  EXPECT_DOUBLE_EQ(value(t, all, "compile_rate"), 5.0 / 6);
  EXPECT_DOUBLE_EQ(value(t, all, "correct_strict"), 0.5);
  EXPECT_NEAR(value(t, all, "geomean_speedup"), std::cbrt(1.6), 1e-12);
  EXPECT_DOUBLE_EQ(value(t, all, "slower_than_eager"), 1.0 / 3);
  EXPECT_DOUBLE_EQ(value(t, all, "fast_1"), 2.0 / 6);
  EXPECT_NE(t.notes[0].find("1 older verdicts"), std::string::npos);
  EXPECT_NE(t.notes[0].find("1 harness_error rows left out"), std::string::npos);
}

TEST(Analyze, LevelCoreCountsTheKernelThatFailedOnlyAnEdgeCase) {
  MethodsFixture f;
  report::AnalyzeOptions o;
  o.level = "core";
  o.analyses = {"methods"};
  const auto t = analyze({&f.db.store()}, o).at(0);
  const std::vector<std::string> act = {"m", "NVIDIA H200", "Activation"};
  EXPECT_EQ(value(t, act, "timed_correct"), 3);
  EXPECT_NEAR(value(t, act, "geomean_speedup"), std::cbrt(2.0 * 0.5 * 1.2), 1e-12);
  EXPECT_DOUBLE_EQ(value(t, act, "slower_than_eager"), 1.0 / 3);
  EXPECT_DOUBLE_EQ(value(t, act, "fast_1"), 0.5);
}

TEST(Analyze, UnsolvedTasksPerCategory) {
  test::TempDir dir;
  SyntheticDb db(dir.path() / "u.db");
  const auto rm = db.run("m", "H200"), rn = db.run("n", "H200");
  db.kernel(rm, "m", "Fusion/a", "passed", 1.0);
  for (const char* t : {"Fusion/b", "Fusion/c", "Fusion/d"}) {
    db.kernel(rm, "m", t, "numerical_mismatch", std::nullopt);
    db.kernel(rn, "n", t, "runtime_error", std::nullopt);
  }
  db.kernel(rn, "n", "Math/add", "passed", 1.0);
  report::AnalyzeOptions o;
  o.analyses = {"unsolved"};
  const auto t = analyze({&db.store()}, o).at(0);
  EXPECT_EQ(value(t, {"Fusion"}, "tasks"), 4);
  EXPECT_EQ(value(t, {"Fusion"}, "methods"), 2);
  EXPECT_EQ(value(t, {"Fusion"}, "unsolved"), 3);
  EXPECT_DOUBLE_EQ(value(t, {"Fusion"}, "unsolved_share"), 0.75);
  EXPECT_DOUBLE_EQ(value(t, {"Math"}, "unsolved_share"), 0);
  EXPECT_DOUBLE_EQ(value(t, {"all"}, "unsolved_share"), 0.6);
}

TEST(Analyze, RefinementRoundsAndARescuedKernel) {
  test::TempDir dir;
  SyntheticDb db(dir.path() / "r.db");
  const auto run = db.run("r", "H200");
  db.kernel(run, "r", "Math/add", "compile_error", std::nullopt, 1, 0);  // rescued in round 2
  db.kernel(run, "r", "Math/add", "passed", 1.2, 2, 0);
  db.kernel(run, "r", "Math/sub", "passed", 2.0, 1, 0);  // correct from round 1
  db.kernel(run, "r", "Math/sub", "passed", 1.5, 2, 0);
  db.kernel(run, "r", "Math/mul", "numerical_mismatch", std::nullopt, 1, 0);  // never
  db.kernel(run, "r", "Math/mul", "compile_error", std::nullopt, 2, 0);
  db.kernel(run, "r", "Math/mul", "numerical_mismatch", std::nullopt, 3, 0);
  db.kernel(run, "r", "Math/div", "passed", 1.0, 1, 0);  // stops after round 1: carried forward
  const auto tables = analyze({&db.store()});
  const auto& t = table(tables, "refinement");
  auto round = [](const char* r) { return std::vector<std::string>{"r", "H200", r}; };
  EXPECT_EQ(value(t, round("1"), "kernels"), 4);
  EXPECT_DOUBLE_EQ(value(t, round("1"), "compile_rate"), 0.75);
  EXPECT_DOUBLE_EQ(value(t, round("1"), "correct_rate"), 0.5);
  EXPECT_NEAR(value(t, round("1"), "geomean_speedup"), std::sqrt(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(value(t, round("2"), "compile_rate"), 0.75);
  EXPECT_DOUBLE_EQ(value(t, round("2"), "correct_rate"), 0.75);
  EXPECT_NEAR(value(t, round("2"), "geomean_speedup"), std::cbrt(1.2 * 1.5 * 1.0), 1e-12);
  EXPECT_DOUBLE_EQ(value(t, round("3"), "compile_rate"), 1.0);
  EXPECT_DOUBLE_EQ(value(t, round("3"), "correct_rate"), 0.75);
  const auto& rescued = table(tables, "refinement_rescued");
  const std::vector<std::string> first = {"r", "H200", "correct from the first round"};
  const std::vector<std::string> saved = {"r", "H200", "rescued by refinement"};
  const std::vector<std::string> never = {"r", "H200", "never correct"};
  EXPECT_EQ(value(rescued, first, "kernels"), 2);
  EXPECT_NEAR(value(rescued, first, "geomean_speedup"), std::sqrt(2.0), 1e-12);
  EXPECT_EQ(value(rescued, saved, "kernels"), 1);
  EXPECT_DOUBLE_EQ(value(rescued, saved, "share"), 0.25);
  EXPECT_NEAR(value(rescued, saved, "geomean_speedup"), 1.2, 1e-12);
  EXPECT_EQ(value(rescued, never, "kernels"), 1);
  EXPECT_FALSE(cell(rescued, never, "geomean_speedup").value);
  // the methods table takes each task's last round
  const auto& m = table(tables, "methods");
  EXPECT_DOUBLE_EQ(value(m, {"r", "H200", "all"}, "correct_strict"), 0.75);
}

TEST(Analyze, HardwareSpreadAcrossTwoGpus) {
  test::TempDir dir;
  SyntheticDb a(dir.path() / "a.db"), b(dir.path() / "b.db");
  const auto ra = a.run("h", "NVIDIA A100"), rb = b.run("h", "NVIDIA H200");
  a.kernel(ra, "h", "Math/add", "passed", 1.0);
  b.kernel(rb, "h", "Math/add", "passed", 4.0);
  a.kernel(ra, "h", "Math/sub", "passed", 2.0);
  b.kernel(rb, "h", "Math/sub", "passed", 3.0);
  a.kernel(ra, "h", "Math/mul", "passed", 1.0);
  b.kernel(rb, "h", "Math/mul", "numerical_mismatch", 9.0);  // wrong there: no spread
  a.kernel(ra, "h", "Math/div", "passed", 1.0);              // on one GPU only
  const auto tables = analyze({&a.store(), &b.store()});
  const auto& t = table(tables, "hardware");
  EXPECT_EQ(cell(t, {"h"}, "gpus").text, "NVIDIA A100, NVIDIA H200");
  EXPECT_EQ(value(t, {"h"}, "shared"), 3);
  EXPECT_EQ(value(t, {"h"}, "kernels"), 2);
  EXPECT_DOUBLE_EQ(value(t, {"h"}, "median_spread"), 2.75);
  EXPECT_DOUBLE_EQ(value(t, {"h"}, "p90_spread"), 3.75);
  EXPECT_DOUBLE_EQ(value(t, {"h"}, "max_spread"), 4.0);
  EXPECT_EQ(cell(t, {"h"}, "max_task").text, "Math/add");
  const auto& dist = table(tables, "hardware_spread");
  EXPECT_EQ(value(dist, {"h", "1.5x to 2x"}, "kernels"), 1);
  EXPECT_EQ(value(dist, {"h", "2x to 5x"}, "kernels"), 1);
  EXPECT_DOUBLE_EQ(value(dist, {"h", "2x to 5x"}, "share"), 0.5);
  EXPECT_EQ(value(dist, {"h", "1x to 1.1x"}, "kernels"), 0);
  const auto& gpus = table(tables, "hardware_gpus");
  EXPECT_NEAR(value(gpus, {"h", "NVIDIA A100"}, "geomean_speedup"), std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(value(gpus, {"h", "NVIDIA H200"}, "geomean_speedup"), std::sqrt(12.0), 1e-12);
  // each GPU is a row of its own in the methods table
  const auto& m = table(tables, "methods");
  EXPECT_EQ(value(m, {"h", "NVIDIA A100", "all"}, "kernels"), 4);
  EXPECT_EQ(value(m, {"h", "NVIDIA H200", "all"}, "kernels"), 3);
}

/// Two methods with the same rates in each category: A 9 of 10 correct, B 5 of 10, C 1 of 10;
/// a planted category effect and no method effect.
struct PlantedFixture {
  test::TempDir dir;
  SyntheticDb db{dir.path() / "p.db"};
  PlantedFixture() {
    for (const char* method : {"m1", "m2"}) {
      const auto run = db.run(method, "H200");
      for (auto [cat, correct] : {std::pair{"A", 9}, std::pair{"B", 5}, std::pair{"C", 1}}) {
        for (int i = 0; i < 10; ++i) {
          db.kernel(run, method, fmt::format("{}/t{}", cat, i),
                    i < correct ? "passed" : "numerical_mismatch", i < correct ? 1.5 : 0.0);
        }
      }
    }
  }
};

TEST(Analyze, DevianceOfAPlantedCategoryEffect) {
  PlantedFixture f;
  report::AnalyzeOptions o;
  o.analyses = {"deviance"};
  const auto tables = analyze({&f.db.store()}, o);
  const auto& models = table(tables, "deviance");
  auto part = [](double p) { return 20 * (p * std::log(p) + (1 - p) * std::log(1 - p)); };
  const double category_dev = -2 * (part(0.9) + part(0.5) + part(0.1));
  const double null_dev = 60 * 2 * std::log(2.0);
  EXPECT_NEAR(value(models, {"null"}, "deviance"), null_dev, 1e-8);
  EXPECT_NEAR(value(models, {"category"}, "deviance"), category_dev, 1e-8);
  EXPECT_NEAR(value(models, {"category"}, "explained"), 1 - category_dev / null_dev, 1e-10);
  EXPECT_NEAR(value(models, {"method"}, "explained"), 0, 1e-10);
  EXPECT_NEAR(value(models, {"category + method"}, "deviance"), category_dev, 1e-8);
  EXPECT_EQ(value(models, {"category"}, "converged"), 1);
  EXPECT_EQ(value(models, {"category"}, "separation"), 0);
  EXPECT_EQ(value(models, {"category"}, "df_residual"), 57);
  const auto& coefs = table(tables, "deviance_coefficients");
  EXPECT_NEAR(value(coefs, {"category", "(Intercept)"}, "estimate"), std::log(9.0), 1e-9);
  EXPECT_NEAR(value(coefs, {"category", "categoryB"}, "estimate"), -std::log(9.0), 1e-9);
  EXPECT_NEAR(value(coefs, {"category", "categoryC"}, "estimate"), -2 * std::log(9.0), 1e-9);
  EXPECT_NEAR(value(coefs, {"category + method", "methodm2"}, "estimate"), 0, 1e-9);
  const auto& tests = table(tables, "deviance_tests");
  EXPECT_NEAR(value(tests, {"category", "null"}, "statistic"), null_dev - category_dev, 1e-8);
  EXPECT_EQ(value(tests, {"category", "null"}, "df"), 2);
  EXPECT_LT(value(tests, {"category", "null"}, "p_value"), 1e-6);
  EXPECT_NEAR(value(tests, {"method", "null"}, "p_value"), 1, 1e-9);
}

TEST(Analyze, DevianceSurvivesACategoryWhereEverythingFails) {
  PlantedFixture f;
  const auto run = f.db.run("m1", "H200");
  for (int i = 0; i < 10; ++i) {
    f.db.kernel(run, "m1", fmt::format("D/t{}", i), "compile_error", std::nullopt);
  }
  report::AnalyzeOptions o;
  o.analyses = {"deviance"};
  const auto tables = analyze({&f.db.store()}, o);
  const auto& models = table(tables, "deviance");
  EXPECT_EQ(value(models, {"category"}, "separation"), 1);
  EXPECT_TRUE(std::isfinite(value(models, {"category + method"}, "deviance")));
  bool named = false;
  for (const auto& n : models.notes) {
    named = named || n.find("no correct kernel in category D") != std::string::npos;
  }
  EXPECT_TRUE(named);
}

TEST(Analyze, BootstrapIntervalsAreSeededAndBracketTheEstimate) {
  PlantedFixture f;
  report::AnalyzeOptions o;
  o.analyses = {"methods", "unsolved"};
  o.bootstrap = 300;
  o.seed = 11;
  const auto t1 = analyze({&f.db.store()}, o);
  const auto t2 = analyze({&f.db.store()}, o);
  const auto& c = cell(table(t1, "methods"), {"m1", "H200", "all"}, "correct_strict");
  ASSERT_TRUE(c.lo && c.hi);
  EXPECT_LE(*c.lo, *c.value);
  EXPECT_GE(*c.hi, *c.value);
  EXPECT_GT(*c.hi - *c.lo, 0.05);  // 30 tasks: a real spread
  EXPECT_EQ(*cell(table(t2, "methods"), {"m1", "H200", "all"}, "correct_strict").lo, *c.lo);
  EXPECT_FALSE(cell(table(t1, "methods"), {"m1", "H200", "all"}, "kernels").lo);  // a count
  o.seed = 12;
  const auto t3 = analyze({&f.db.store()}, o);
  const auto& other = cell(table(t3, "methods"), {"m1", "H200", "all"}, "correct_strict");
  EXPECT_TRUE(*other.lo != *c.lo || *other.hi != *c.hi);
  const auto& u = cell(table(t1, "unsolved"), {"C"}, "unsolved_share");
  ASSERT_TRUE(u.lo && u.hi);
  EXPECT_LE(*u.lo, *u.value);
}

TEST(Analyze, FormatsCarryTheTables) {
  MethodsFixture f;
  report::AnalyzeOptions o;
  o.analyses = {"methods", "unsolved"};
  o.bootstrap = 50;
  store::Verdicts v;
  store::read_verdicts(f.db.store(), "m.db", v);
  const auto tables = report::analyze(v, o);
  const auto doc = nlohmann::json::parse(report::tables_json(tables, report::analyze_header(v, o)));
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["databases"][0], "m.db");
  EXPECT_EQ(doc["bootstrap"]["replicates"], 50);
  ASSERT_EQ(doc["tables"].size(), 2u);
  EXPECT_EQ(doc["tables"][0]["name"], "methods");
  const auto& row = doc["tables"][0]["rows"][0];
  EXPECT_EQ(row["category"], "Activation");
  EXPECT_EQ(row["kernels"], 4);
  EXPECT_DOUBLE_EQ(row["compile_rate"].get<double>(), 0.75);
  EXPECT_EQ(row["compile_rate_ci"].size(), 2u);
  EXPECT_TRUE(row["geomean_speedup"].is_number());
  const std::string csv = report::tables_csv(tables);
  EXPECT_EQ(csv.rfind("# table: methods\nmethod,gpu,category,tasks,kernels,compile_rate,"
                      "compile_rate_lo,compile_rate_hi,",
                      0),
            0u);
  EXPECT_NE(csv.find("\nm,NVIDIA H200,Activation,4,4,0.75,"), std::string::npos);
  EXPECT_NE(csv.find("# table: unsolved\n"), std::string::npos);
  const std::string md = report::tables_markdown(tables, "kbx analyze");
  EXPECT_NE(md.find("## Per method and category"), std::string::npos);
  EXPECT_NE(md.find("| m | NVIDIA H200 | Activation | 4 | 4 | 75.0% ["), std::string::npos);
  const std::string text = report::tables_text(tables);
  EXPECT_NE(text.find("== Tasks that no method solves, per category (unsolved)"),
            std::string::npos);
}

TEST(Analyze, LaterDatabaseWinsAndUngradedRowsKeepTheirStatus) {
  test::TempDir dir;
  SyntheticDb a(dir.path() / "a.db"), b(dir.path() / "b.db");
  a.kernel(a.run("m", "H200"), "m", "Math/add", "numerical_mismatch", std::nullopt);
  const auto rb = b.run("m", "H200");
  b.kernel(rb, "m", "Math/add", "passed", 2.0);  // the same kernel on the same GPU, judged again
  b.kernel(rb, "m", "Math/sub", "passed", 1.0);
  // a row stored before schema 3 has no grades: its status counts at every level
  sqlite3_exec(b.store().handle(),
               "DELETE FROM result_grades WHERE result_id = (SELECT id FROM results WHERE "
               "task = 'Math/sub')",
               nullptr, nullptr, nullptr);
  report::AnalyzeOptions o;
  o.analyses = {"methods"};
  o.level = "kbx";
  const auto t = analyze({&a.store(), &b.store()}, o).at(0);
  EXPECT_EQ(value(t, {"m", "H200", "all"}, "kernels"), 2);
  EXPECT_DOUBLE_EQ(value(t, {"m", "H200", "all"}, "correct_kbx"), 1.0);
  EXPECT_NEAR(value(t, {"m", "H200", "all"}, "geomean_speedup"), std::sqrt(2.0), 1e-12);
  EXPECT_NE(t.notes[0].find("1 older verdicts"), std::string::npos);
}

TEST(Analyze, BadOptionsAreErrorsNamingTheFlag) {
  MethodsFixture f;
  report::AnalyzeOptions o;
  o.analyses = {"bogus"};
  EXPECT_THROW(analyze({&f.db.store()}, o), Error);
  o.analyses = {};
  o.level = "loose";
  EXPECT_THROW(analyze({&f.db.store()}, o), Error);
  o.level = "strict";
  o.bootstrap = -1;
  EXPECT_THROW(analyze({&f.db.store()}, o), Error);
}

}  // namespace
}  // namespace kbx
