// kbx report (issue 15): the chart data from stored rows, the SVG charts (empty and normal), the
// rounds read before and after candidates have a round column, and the report folder.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/error.h"
#include "common/util.h"
#include "report/chart_data.h"
#include "report/charts.h"
#include "report/html.h"
#include "report/report_data.h"
#include "report/svg.h"
#include "store/calibration.h"
#include "store/rounds.h"
#include "store/store.h"
#include "test_util.h"

namespace kbx {
namespace {

using report::MethodSpeedups;

/// Occurrences of a substring.
size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

/// True when every element of the markup is closed in order (a small XML check: tags only,
/// enough for what the charts write); says where it is not.
::testing::AssertionResult well_formed(const std::string& xml) {
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([A-Za-z][A-Za-z0-9-]*)[^<>]*?(/?)>)");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), tag); it != std::sregex_iterator();
       ++it) {
    const auto& m = *it;
    static const std::vector<std::string> kVoid = {"meta", "br", "link", "img", "input", "hr"};
    if (m[3].length() || std::count(kVoid.begin(), kVoid.end(), m[2].str())) continue;
    if (!m[1].length()) {
      open.push_back(m[2]);
    } else if (open.empty() || open.back() != m[2]) {
      return ::testing::AssertionFailure()
             << "</" << m[2] << "> closes " << (open.empty() ? "nothing" : open.back()) << " at "
             << m.position();
    } else {
      open.pop_back();
    }
  }
  if (!open.empty()) return ::testing::AssertionFailure() << "<" << open.back() << "> not closed";
  return ::testing::AssertionSuccess();
}

store::Result row(const std::string& method, const std::string& task, const std::string& status,
                  std::optional<double> speedup) {
  store::Result r;
  r.run_id = 1;
  r.method = method;
  r.task = task;
  r.category = task.substr(0, task.find('/'));
  r.status = status;
  r.speedup = speedup;
  r.strict = r.core = r.kbx = {status, status == "passed"};
  return r;
}

store::CaseResult timed_case(const std::string& name, double ms, double flops, double bytes) {
  store::CaseResult c;
  c.name = name;
  c.tier = "full";
  c.status = "passed";
  c.cand_ms = ms;
  c.eager_ms = ms * 2;
  c.flops = flops;
  c.bytes = bytes;
  c.dtype = "float32";
  return c;
}

/// Three methods over three categories, with timings and cost models.
std::vector<store::Result> sample_rows() {
  std::vector<store::Result> rows = {
      row("alpha", "Activation/gelu", "passed", 1.5),
      row("alpha", "Math/add", "passed", 0.8),
      row("alpha", "Reduce/sum", "numerical_mismatch", std::nullopt),
      row("beta", "Activation/gelu", "passed", 3.0),
      row("beta", "Math/add", "compile_error", std::nullopt),
      row("gamma", "Activation/gelu", "passed", std::nullopt),  // correct, untimed
      row("gamma", "Reduce/sum", "passed", 12.0),
  };
  rows[0].cases = {timed_case("full_0", 1.0, 1e9, 4e9)};  // 0.25 FLOP/B
  rows[3].cases = {timed_case("full_0", 0.5, 0, 4e9)};    // no FLOPs: at the left edge
  rows[6].cases = {timed_case("full_0", 2.0, 8e12, 1e9)};
  return rows;
}

store::Calibration calibration(const std::string& fingerprint) {
  store::Calibration c;
  c.fingerprint = fingerprint;
  c.device = "cuda";
  c.gpu = "NVIDIA H200";
  c.peaks = {{"copy_bw", 4e12}, {"fp32", 5e13}};
  return c;
}

report::RunCalibrations calibrated_run_1() {
  report::RunCalibrations cals;
  cals[1].fingerprint = "fp";
  cals[1].calibration = calibration("fp");
  cals[1].matched_by = "fingerprint";
  return cals;
}

TEST(ReportSvg, EscapesScalesAndTicks) {
  EXPECT_EQ(report::svg::escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  EXPECT_EQ(report::svg::px(-0.01), "0.0");
  const report::svg::Scale log{0.1, 10, 0, 200, true};
  EXPECT_DOUBLE_EQ(log(1), 100);
  EXPECT_DOUBLE_EQ(log(1000), 200);  // clamped
  EXPECT_EQ(report::svg::ticks(log), (std::vector<double>{0.1, 0.2, 0.5, 1, 2, 5, 10}));
  const report::svg::Scale wide{0.01, 1e4, 0, 1, true};
  EXPECT_EQ(report::svg::ticks(wide).size(), 7u);  // decades only
  const auto [lo, hi] = report::svg::log_range(0.37, 13);
  EXPECT_DOUBLE_EQ(lo, 0.2);
  EXPECT_DOUBLE_EQ(hi, 20);
  report::svg::Scale rounds{0, 1, 0, 1, false};
  rounds.min_step = 1;
  EXPECT_EQ(report::svg::ticks(rounds), (std::vector<double>{0, 1}));
  EXPECT_EQ(report::svg::ticks({0, 1, 0, 1, false}).size(), 6u);  // 0, 0.2, ..., 1
}

TEST(ReportChartData, FastPAndQuartilesByHand) {
  const auto methods = report::method_speedups(sample_rows());
  ASSERT_EQ(methods.size(), 3u);
  const MethodSpeedups& alpha = methods[0];
  EXPECT_EQ(alpha.tasks, 3);
  EXPECT_EQ(alpha.correct, 2);
  EXPECT_EQ(alpha.speedups, (std::vector<double>{0.8, 1.5}));
  EXPECT_EQ(alpha.speedup_tasks, (std::vector<std::string>{"Math/add", "Activation/gelu"}));
  EXPECT_DOUBLE_EQ(report::fast_p(alpha, 0), 2.0 / 3);
  EXPECT_DOUBLE_EQ(report::fast_p(alpha, 0.5), 2.0 / 3);
  EXPECT_DOUBLE_EQ(report::fast_p(alpha, 1), 1.0 / 3);
  EXPECT_DOUBLE_EQ(report::fast_p(alpha, 1.5), 0);  // strictly above p
  const MethodSpeedups& gamma = methods[2];
  EXPECT_DOUBLE_EQ(report::fast_p(gamma, 0), 1);  // the untimed correct task counts at 0 only
  EXPECT_DOUBLE_EQ(report::fast_p(gamma, 1), 0.5);
  EXPECT_DOUBLE_EQ(*report::geomean_speedup(alpha), std::sqrt(0.8 * 1.5));

  const auto q = report::quartiles({1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(q.q1, 2);
  EXPECT_DOUBLE_EQ(q.median, 3);
  EXPECT_DOUBLE_EQ(q.q3, 4);
  const auto two = report::quartiles({1, 2});
  EXPECT_DOUBLE_EQ(two.q1, 1.25);
  EXPECT_DOUBLE_EQ(two.median, 1.5);
}

TEST(ReportChartData, HeatmapRooflineAndTrajectories) {
  const auto rows = sample_rows();
  const auto h = report::correctness_heatmap(rows);
  EXPECT_EQ(h.categories, (std::vector<std::string>{"Activation", "Math", "Reduce"}));
  EXPECT_EQ(h.methods, (std::vector<std::string>{"alpha", "beta", "gamma"}));
  EXPECT_EQ(h.cells.at({"Math", "beta"}).correct, 0);
  EXPECT_EQ(h.cells.at({"Math", "beta"}).tasks, 1);
  EXPECT_EQ(h.cells.count({"Math", "gamma"}), 0u);

  const auto none = report::roofline_points(rows, {});
  EXPECT_TRUE(none.points.empty());
  EXPECT_EQ(none.timed_cases, 3);
  EXPECT_EQ(none.uncalibrated, 3);
  const auto rl = report::roofline_points(rows, calibrated_run_1());
  ASSERT_EQ(rl.points.size(), 3u);
  EXPECT_DOUBLE_EQ(rl.points[0].intensity, 0.25);
  // alpha: 4e9 B at 4e12 B/s = 1 ms (longer than 1e9 FLOP at 5e13) over 1 ms measured
  EXPECT_DOUBLE_EQ(rl.points[0].fraction, 1.0);
  EXPECT_DOUBLE_EQ(rl.points[1].intensity, 0);
  // gamma: 8e12 FLOP at 5e13 FLOP/s = 160 ms over 2 ms measured: an impossible 80x
  EXPECT_DOUBLE_EQ(rl.points[2].fraction, 80);

  std::vector<store::RoundVerdict> verdicts;
  auto add = [&](const std::string& task, int round, const std::string& status) {
    store::RoundVerdict v;
    v.method = "refine";
    v.task = task;
    v.round = round;
    v.status = status;
    verdicts.push_back(v);
  };
  add("Math/add", 0, "failed");
  add("Math/sub", 0, "passed");
  add("Math/add", 1, "passed");
  add("Math/sub", 1, "failed");  // correct before: still counts by round 1
  add("Math/mul", 2, "failed");
  const auto tr = report::trajectories(verdicts);
  ASSERT_EQ(tr.size(), 1u);
  EXPECT_EQ(tr[0].tasks, 3);
  ASSERT_EQ(tr[0].rounds.size(), 3u);
  EXPECT_EQ(tr[0].rounds[0].correct_so_far, 1);
  EXPECT_EQ(tr[0].rounds[1].correct, 1);
  EXPECT_EQ(tr[0].rounds[1].correct_so_far, 2);
  EXPECT_EQ(tr[0].rounds[2].tasks, 1);
  EXPECT_EQ(tr[0].rounds[2].correct_so_far, 2);
}

TEST(ReportCharts, EmptyDataGivesPlaceholders) {
  const report::svg::MethodColors colors({});
  const std::vector<std::string> charts = {
      report::fast_p_svg({}, colors), report::heatmap_svg({}), report::speedup_svg({}, colors),
      report::roofline_svg({}, colors), report::rounds_svg({}, colors)};
  const auto ids = report::chart_ids();
  ASSERT_EQ(charts.size(), ids.size());
  for (size_t i = 0; i < charts.size(); ++i) {
    const auto& s = charts[i];
    EXPECT_EQ(s.rfind("<svg id=\"" + ids[i] + "\"", 0), 0u) << s;
    EXPECT_NE(s.find("<title id=\"" + ids[i] + "-title\">"), std::string::npos) << s;
    EXPECT_NE(s.find("data-empty=\"true\""), std::string::npos) << s;
    EXPECT_TRUE(well_formed(s)) << s;
  }
  EXPECT_NE(charts[4].find("No rounds"), std::string::npos);
  // correct tasks, none timed (a CPU run): fast_p and speedups say so
  const auto untimed = report::method_speedups({row("m", "Math/add", "passed", std::nullopt)});
  EXPECT_NE(report::fast_p_svg(untimed, colors).find("without timing"), std::string::npos);
  EXPECT_NE(report::speedup_svg(untimed, colors).find("data-empty"), std::string::npos);
  // timed cases without a calibration: the roofline says to calibrate
  auto rows = sample_rows();
  EXPECT_NE(report::roofline_svg(report::roofline_points(rows, {}), colors).find("kbx calibrate"),
            std::string::npos);
}

TEST(ReportCharts, ChartsOfThreeMethods) {
  const auto rows = sample_rows();
  const auto methods = report::method_speedups(rows);
  const report::svg::MethodColors colors({"alpha", "beta", "gamma"});
  EXPECT_NE(colors.of("alpha"), colors.of("beta"));

  const std::string fastp = report::fast_p_svg(methods, colors);
  EXPECT_TRUE(well_formed(fastp)) << fastp;
  EXPECT_EQ(fastp.find("data-empty"), std::string::npos);
  EXPECT_EQ(count(fastp, "<g class=\"series\""), 3u);
  EXPECT_EQ(count(fastp, "class=\"legend-entry\""), 3u);
  EXPECT_NE(fastp.find("fast_0 67%, fast_1 33%"), std::string::npos) << fastp;
  EXPECT_NE(fastp.find(">10x</text>"), std::string::npos);  // p up to 10 at least

  const std::string heat = report::heatmap_svg(report::correctness_heatmap(rows));
  EXPECT_TRUE(well_formed(heat)) << heat;
  EXPECT_EQ(count(heat, "<g class=\"cell\""), 7u + 3u);  // filled cells and the totals row
  EXPECT_EQ(count(heat, "<g class=\"cell empty\""), 2u);
  EXPECT_NE(heat.find("Math x beta: 0 of 1 tasks correct (0%)"), std::string::npos) << heat;
  EXPECT_NE(heat.find("all categories x alpha: 2 of 3 tasks correct (67%)"), std::string::npos);

  const std::string speed = report::speedup_svg(methods, colors);
  EXPECT_TRUE(well_formed(speed)) << speed;
  EXPECT_EQ(count(speed, "<circle"), 4u);  // one per timed correct task
  EXPECT_NE(speed.find("gamma Reduce/sum: 12x"), std::string::npos) << speed;

  const std::string roof =
      report::roofline_svg(report::roofline_points(rows, calibrated_run_1()), colors);
  EXPECT_TRUE(well_formed(roof)) << roof;
  EXPECT_EQ(count(roof, "<circle class=\"series\""), 3u);
  EXPECT_NE(roof.find("1 case without FLOPs sits at the left edge"), std::string::npos);

  std::vector<store::RoundVerdict> verdicts(2);
  verdicts[0].method = verdicts[1].method = "beta";
  verdicts[0].task = verdicts[1].task = "Math/add";
  verdicts[0].status = "compile_error";
  verdicts[1].round = 1;
  verdicts[1].status = "passed";
  const std::string rounds = report::rounds_svg(report::trajectories(verdicts), colors);
  EXPECT_TRUE(well_formed(rounds)) << rounds;
  EXPECT_NE(rounds.find("beta round 1: 1 of 1 tasks correct so far"), std::string::npos);
  for (const auto* s : {&fastp, &heat, &speed, &roof, &rounds}) {
    EXPECT_EQ(s->find("nan"), std::string::npos) << *s;
    EXPECT_EQ(s->find("inf"), std::string::npos) << *s;
  }
}

TEST(ReportRounds, FromOriginTokensOrJson) {
  auto r = store::round_from_origin("gen/refine worker=2 round=3 sample=1");
  EXPECT_EQ(r.round, 3);
  EXPECT_EQ(r.sample, 1);
  EXPECT_EQ(r.worker, 2);
  r = store::round_from_origin(R"({"round": 4, "worker": 0})");
  EXPECT_EQ(r.round, 4);
  EXPECT_FALSE(r.sample);
  EXPECT_EQ(r.worker, 0);
  EXPECT_FALSE(store::round_from_origin("kernels.jsonl:12").round);
  EXPECT_FALSE(store::round_from_origin("surround=3").round);  // not a word of its own
  EXPECT_FALSE(store::round_from_origin("round=x").round);
}

/// A database with runs of methods "a" and "b" (3 categories), timed cases and a calibration.
struct ReportDb {
  std::filesystem::path path;
  std::unique_ptr<store::Store> db;

  explicit ReportDb(std::filesystem::path p) : path(std::move(p)) {
    db = std::make_unique<store::Store>(path);
  }

  std::int64_t run(const std::string& method) {
    store::Run r;
    r.run_key = method + std::to_string(db->runs().size());
    r.method = method;
    r.device = "cuda";
    r.track = "triton";
    const auto id = db->add_run(r);
    db->set_run_environment(id,
                            nlohmann::json({{"gpu", "NVIDIA H200"}, {"fingerprint", "fp"}}).dump());
    return id;
  }

  void result(std::int64_t run_id, const std::string& method, const std::string& task,
              const std::string& status, const std::string& origin) {
    const auto cand =
        db->add_candidate({0, method, task, sha256_hex(method + task + origin), "src", origin});
    store::Result r =
        row(method, task, status, status == "passed" ? 1.25 : std::optional<double>());
    r.run_id = run_id;
    r.candidate_id = cand;
    if (status == "passed") r.cases = {timed_case("full_0", 1.0, 1e9, 2e9)};
    db->add_result(r);
  }
};

TEST(ReportRounds, ReadFromOriginBeforeTheColumnAndFromTheColumnAfter) {
  test::TempDir dir;
  ReportDb d(dir.path() / "r.db");
  const auto run = d.run("refine");
  d.result(run, "refine", "Math/add", "compile_error", "gen round=0 sample=0");
  d.result(run, "refine", "Math/add", "passed", "gen round=1 sample=0");
  d.result(run, "refine", "Math/sub", "passed", "gen.jsonl:3");  // no round
  // Schema 5 has the columns; where they are NULL the origin still tells the round.
  EXPECT_TRUE(store::round_sources(*d.db).round_column);
  auto v = store::round_verdicts(*d.db);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].round, 0);
  EXPECT_EQ(v[1].round, 1);
  EXPECT_EQ(v[1].status, "passed");

  // the columns, where set, win over the origin
  const char* sql = "UPDATE candidates SET round=5, worker=1 WHERE task='Math/sub'";
  ASSERT_EQ(sqlite3_exec(d.db->handle(), sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  EXPECT_TRUE(store::round_sources(*d.db).worker_column);
  v = store::round_verdicts(*d.db);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[2].task, "Math/sub");
  EXPECT_EQ(v[2].round, 5);
  EXPECT_EQ(v[2].worker, 1);
  EXPECT_FALSE(v[2].sample);
  EXPECT_EQ(v[0].round, 0);  // NULL column: still from the origin
}

TEST(ReportFolder, TwoDatabasesMergeAndTheFolderHasEveryChart) {
  test::TempDir dir;
  {
    ReportDb one(dir.path() / "one.db");
    store::save_calibration(*one.db, calibration("fp"));
    const auto r = one.run("a");
    one.result(r, "a", "Activation/gelu", "passed", "x.py");
    one.result(r, "a", "Math/add", "numerical_mismatch", "x.py");
    one.result(r, "a", "Reduce/sum", "passed", "x.py");
  }
  {
    ReportDb two(dir.path() / "two.db");
    const auto r = two.run("b");  // run 1 here too: renumbered
    two.result(r, "b", "Activation/gelu", "passed", "round=0");
    two.result(r, "b", "Math/add", "passed", "round=1");
  }
  const auto data = report::load_report({dir.path() / "one.db", dir.path() / "two.db"}, {});
  ASSERT_EQ(data.results.size(), 5u);
  ASSERT_EQ(data.runs.size(), 2u);
  EXPECT_EQ(data.runs[0].id, 1);
  EXPECT_EQ(data.runs[1].id, 2);
  EXPECT_EQ(data.runs[1].original_id, 1);
  EXPECT_EQ(data.results[3].method, "b");
  EXPECT_EQ(data.results[3].run_id, 2);
  EXPECT_EQ(data.rounds.size(), 2u);
  EXPECT_FALSE(data.calibrations.at(2).calibration);  // two.db has none

  EXPECT_EQ(report::load_report({dir.path() / "two.db"}, {"b"}).results.size(), 2u);
  EXPECT_THROW(report::load_report({dir.path() / "two.db"}, {"zeta"}), Error);
  EXPECT_THROW(report::load_report({dir.path() / "none.db"}, {}), Error);

  const auto files = report::write_report_folder(data, dir.path() / "out");
  const std::string html = read_file(files.html);
  for (const auto& id : report::chart_ids()) {
    EXPECT_EQ(count(html, "<svg id=\"" + id + "\""), 1u) << id;
  }
  EXPECT_EQ(html.find("data-empty"), std::string::npos);  // every chart has data here
  EXPECT_EQ(html.find("http://"), std::string::npos);     // nothing to fetch
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  EXPECT_TRUE(well_formed(html.substr(html.find("<html")))) << html;
  EXPECT_NE(read_file(files.markdown).find("run 2: "), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(read_file(files.json))["results"].size(), 5u);
  EXPECT_EQ(count(read_file(files.csv), "\n"), 6u);
}

}  // namespace
}  // namespace kbx
