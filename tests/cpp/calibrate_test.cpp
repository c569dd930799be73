#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fingerprint.h"
#include "report/table.h"
#include "store/calibration.h"
#include "store/store.h"
#include "test_util.h"

namespace kbx {
namespace {
using nlohmann::json;

FingerprintFields h200() {
  return {"NVIDIA H200", 8, "570.86.15", "12.8", "2.7.0+cu128", "3.3.0"};
}

TEST(Fingerprint, StableForTheSameFields) {
  EXPECT_EQ(fingerprint(h200()), fingerprint(h200()));
  EXPECT_EQ(fingerprint(h200()).size(), 16u);
}

TEST(Fingerprint, ChangesWithEachField) {
  const std::string base = fingerprint(h200());
  std::vector<FingerprintFields> changed(6, h200());
  changed[0].gpu = "NVIDIA H100 80GB HBM3";
  changed[1].gpu_count = 4;
  changed[2].driver = "575.51.03";
  changed[3].cuda = "12.9";
  changed[4].torch = "2.8.0+cu128";
  changed[5].triton = "3.4.0";
  for (size_t i = 0; i < changed.size(); ++i) {
    EXPECT_NE(fingerprint(changed[i]), base) << "field " << i;
  }
}

TEST(Fingerprint, SeparatorsInValuesCannotCollide) {
  FingerprintFields a = h200(), b = h200();
  a.cuda = "12.8";
  a.torch = "x";
  b.cuda = "12.8\",\"x";
  b.torch = "";
  EXPECT_NE(fingerprint(a), fingerprint(b));
}

TEST(Fingerprint, FromAnEnvironmentRecordIgnoresOtherKeys) {
  json env = {{"gpu", "NVIDIA H200"}, {"gpu_count", 8},         {"driver", "570.86.15"},
              {"cuda", "12.8"},       {"torch", "2.7.0+cu128"}, {"triton", "3.3.0"}};
  EXPECT_EQ(fingerprint(fingerprint_fields(env)), fingerprint(h200()));
  env["host"] = "node17";
  env["clocks_start"] = json::array({{{"sm", 1980}, {"mem", 3201}}});
  env["kbx_revision"] = "abc123";
  EXPECT_EQ(fingerprint(fingerprint_fields(env)), fingerprint(h200()));
  // A CPU-only record (no gpu, null triton) still gives a fingerprint.
  json cpu = {{"torch", "2.7.0"}, {"triton", nullptr}, {"cuda_available", false}};
  const auto f = fingerprint_fields(cpu);
  EXPECT_EQ(f.gpu, "");
  EXPECT_EQ(f.gpu_count, 0);
  EXPECT_EQ(f.triton, "");
  EXPECT_EQ(fingerprint(f).size(), 16u);
}

TEST(Fingerprint, ParsesNvidiaSmiClocks) {
  const json clocks = parse_gpu_clocks("1980, 3201\n[N/A], 1593\n");
  ASSERT_EQ(clocks.size(), 2u);
  EXPECT_EQ(clocks[0]["sm"], 1980);
  EXPECT_EQ(clocks[0]["mem"], 3201);
  EXPECT_TRUE(clocks[1]["sm"].is_null());
  EXPECT_EQ(clocks[1]["mem"], 1593);
  EXPECT_TRUE(parse_gpu_clocks("").is_null());
}

store::Calibration calibration(const std::string& fp, const std::string& gpu,
                               std::map<std::string, double> peaks) {
  store::Calibration c;
  c.fingerprint = fp;
  c.device = "cuda";
  c.gpu = gpu;
  c.peaks = std::move(peaks);
  c.environment_json = R"({"note":"test"})";
  return c;
}

TEST(Calibration, SaveAndLoadTheNewest) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  EXPECT_FALSE(store::latest_calibration(db, "fp-a"));  // no table yet: nothing, no error
  const auto first = store::save_calibration(db, calibration("fp-a", "NVIDIA H200", {{"fp32", 1}}));
  const auto second =
      store::save_calibration(db, calibration("fp-a", "NVIDIA H200", {{"fp32", 2}, {"bf16", 3}}));
  const auto other =
      store::save_calibration(db, calibration("fp-b", "NVIDIA H100", {{"copy_bw", 4e12}}));
  EXPECT_LT(first, second);
  auto a = store::latest_calibration(db, "fp-a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->id, second);
  EXPECT_EQ(a->peaks.at("fp32"), 2);
  EXPECT_EQ(a->peaks.at("bf16"), 3);
  EXPECT_EQ(a->gpu, "NVIDIA H200");
  EXPECT_EQ(a->device, "cuda");
  EXPECT_FALSE(a->measured_at.empty());
  EXPECT_EQ(a->environment_json, R"({"note":"test"})");
  auto b = store::latest_calibration_for_gpu(db, "cuda", "NVIDIA H100");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->id, other);
  EXPECT_EQ(b->peaks.at("copy_bw"), 4e12);
  EXPECT_FALSE(store::latest_calibration_for_gpu(db, "cpu", "NVIDIA H100"));
  EXPECT_FALSE(store::latest_calibration(db, "fp-c"));
}

TEST(Calibration, RunsFindTheirsByFingerprintElseByGpuModel) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  json env = {{"gpu", "NVIDIA H200"}, {"gpu_count", 8},         {"driver", "570.86.15"},
              {"cuda", "12.8"},       {"torch", "2.7.0+cu128"}, {"triton", "3.3.0"}};
  const std::string fp = fingerprint(fingerprint_fields(env));
  store::Run run;
  run.device = "cuda";
  run.environment_json = env.dump();
  EXPECT_FALSE(store::calibration_for_run(db, run).calibration);

  const auto by_model = store::save_calibration(db, calibration("older-stack", "NVIDIA H200", {}));
  auto rc = store::calibration_for_run(db, run);
  EXPECT_EQ(rc.fingerprint, fp);  // computed from the fields when the run did not record it
  ASSERT_TRUE(rc.calibration);
  EXPECT_EQ(rc.calibration->id, by_model);
  EXPECT_EQ(rc.matched_by, "gpu model");

  const auto exact = store::save_calibration(db, calibration(fp, "NVIDIA H200", {}));
  store::save_calibration(db, calibration("newer-stack", "NVIDIA H200", {}));
  env["fingerprint"] = fp;
  run.environment_json = env.dump();
  rc = store::calibration_for_run(db, run);
  ASSERT_TRUE(rc.calibration);
  EXPECT_EQ(rc.calibration->id, exact);
  EXPECT_EQ(rc.matched_by, "fingerprint");

  run.environment_json = "";  // a run that never started a worker
  EXPECT_FALSE(store::calibration_for_run(db, run).calibration);
}

TEST(Calibration, TheFloorTakesEachPeakAtItsHighestOverTheMatchingCalibrations) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  json env = {{"gpu", "NVIDIA H200"}, {"fingerprint", "fp-a"}};
  store::Run run;
  run.device = "cuda";
  run.environment_json = env.dump();
  EXPECT_TRUE(store::floor_peaks(db, run).empty());
  // the bf16 GEMM read at 783 TFLOP/s once, at 737 under dipping clocks later (session 20)
  store::save_calibration(db,
                          calibration("fp-a", "NVIDIA H200", {{"bf16", 783e12}, {"fp32", 50e12}}));
  store::save_calibration(db,
                          calibration("fp-a", "NVIDIA H200", {{"bf16", 737e12}, {"fp32", 51e12}}));
  // another software stack on the same model, higher: not this run's machine state
  store::save_calibration(db, calibration("fp-b", "NVIDIA H200", {{"bf16", 900e12}}));
  auto peaks = store::floor_peaks(db, run);
  EXPECT_EQ(peaks.at("bf16"), 783e12);  // not the newest's 737
  EXPECT_EQ(peaks.at("fp32"), 51e12);
  EXPECT_EQ(store::calibration_for_run(db, run).calibration->peaks.at("bf16"), 737e12);  // reports

  // matched by the GPU model (no calibration of its fingerprint): the model's highest
  env["fingerprint"] = "fp-none";
  run.environment_json = env.dump();
  EXPECT_EQ(store::floor_peaks(db, run).at("bf16"), 900e12);
  // a peak only an older calibration names is not added
  EXPECT_EQ(store::floor_peaks(db, run).count("fp32"), 0u);
}

TEST(Calibration, FromWorkerEvents) {
  const json hello = {
      {"ev", "hello"},          {"pid", 7},
      {"torch", "2.7.0"},       {"triton", "3.3.0"},
      {"gpu", "NVIDIA H200"},   {"gpu_count", 1},
      {"cuda", "12.8"},         {"driver", "570.1"},
      {"cuda_available", true}, {"clocks", json::array({{{"sm", 345}, {"mem", 3201}}})}};
  std::vector<json> events = {
      hello,
      {{"ev", "gpu"}, {"name", "NVIDIA H200"}, {"sm_count", 132}, {"environment", json::object()}},
      {{"ev", "peak"}, {"name", "copy_bw"}, {"value", 4e12}, {"unit", "B/s"}, {"samples", 20}},
      {{"ev", "peak"}, {"name", "bf16"}, {"value", 7e14}, {"unit", "FLOP/s"}, {"samples", 15}},
      {{"ev", "skipped"}, {"name", "int8"}, {"reason", "no _int_mm"}},
      {{"ev", "clocks_end"}, {"clocks", json::array({{{"sm", 1980}, {"mem", 3201}}})}},
      {{"ev", "done"}}};
  const auto c = store::calibration_from_events(events, "cuda");
  EXPECT_EQ(c.gpu, "NVIDIA H200");
  EXPECT_EQ(c.device, "cuda");
  EXPECT_EQ(c.peaks.size(), 2u);
  EXPECT_EQ(c.peaks.at("copy_bw"), 4e12);
  EXPECT_EQ(c.fingerprint, fingerprint(fingerprint_fields(hello)));
  const json env = json::parse(c.environment_json);
  EXPECT_EQ(env["skipped"]["int8"], "no _int_mm");
  EXPECT_EQ(env["samples"]["bf16"], 15);
  EXPECT_EQ(env["calibrated_device"]["sm_count"], 132);
  EXPECT_FALSE(env.contains("pid"));
  EXPECT_EQ(env["clocks_start"][0]["sm"], 345);
  EXPECT_EQ(env["clocks_end"][0]["sm"], 1980);
  EXPECT_FALSE(env.contains("clocks"));

  events.erase(events.begin() + 1);  // no gpu event
  EXPECT_THROW(store::calibration_from_events(events, "cuda"), Error);
  EXPECT_THROW(store::calibration_from_events({hello, {{"ev", "gpu"}, {"name", "x"}}}, "cuda"),
               Error);
}

TEST(Calibration, EndClocksOnlyForRunsThatRecordedStartClocks) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  store::Run r;
  r.run_key = "k";
  r.method = "m";
  r.device = "cpu";
  r.track = "any";
  r.environment_json = R"({"torch":"2.7.0"})";
  const auto plain = db.add_run(r);
  r.environment_json = R"({"torch":"2.7.0","clocks_start":[{"sm":1980,"mem":3201}]})";
  const auto gpu = db.add_run(r);
  store::record_end_clocks(db, plain);
  store::record_end_clocks(db, gpu);
  const auto runs = db.runs();
  EXPECT_FALSE(json::parse(runs[0].environment_json).contains("clocks_end"));
  EXPECT_TRUE(json::parse(runs[1].environment_json).contains("clocks_end"));  // null: no GPU here
}

// --- roofline --------------------------------------------------------------------------------

store::CaseResult timed_case(const std::string& dtype) {
  store::CaseResult c;
  c.name = "perf";
  c.tier = "full";
  c.status = "passed";
  c.cand_ms = 10.0;  // 0.01 s
  c.flops = 2e12;
  c.bytes = 1e9;
  c.dtype = dtype;
  return c;
}

store::Calibration peaks() {
  store::Calibration c = calibration("fp", "NVIDIA H200", {});
  c.id = 5;
  c.measured_at = "2026-01-01T00:00:00Z";
  c.peaks = {{"copy_bw", 1e12}, {"fp32", 5e13}, {"bf16", 1e15}, {"fp16", 1e15}};
  return c;
}

TEST(Roofline, DtypesPickTheirPeak) {
  EXPECT_EQ(report::peak_for_dtype("float32"), "fp32");
  EXPECT_EQ(report::peak_for_dtype("torch.float32"), "fp32");
  EXPECT_EQ(report::peak_for_dtype("bfloat16"), "bf16");
  EXPECT_EQ(report::peak_for_dtype("torch.float16"), "fp16");
  EXPECT_EQ(report::peak_for_dtype("int8"), "int8");
  EXPECT_EQ(report::peak_for_dtype("float64"), "");
  EXPECT_EQ(report::peak_for_dtype(""), "");
}

TEST(Roofline, ComputeBoundCase) {
  const auto cal = peaks();
  const auto rl = report::case_roofline(timed_case("bfloat16"), &cal);
  ASSERT_TRUE(rl.achieved_flops && rl.achieved_bytes_per_s && rl.roofline_fraction);
  EXPECT_DOUBLE_EQ(*rl.achieved_flops, 2e14);        // 2e12 flop / 0.01 s
  EXPECT_DOUBLE_EQ(*rl.achieved_bytes_per_s, 1e11);  // 1e9 B / 0.01 s
  // max(2e12 / 1e15, 1e9 / 1e12) = max(2 ms, 1 ms) = 2 ms of 10 ms
  EXPECT_DOUBLE_EQ(*rl.roofline_fraction, 0.2);
  EXPECT_EQ(rl.peak, "bf16");
  EXPECT_EQ(rl.basis, "bf16+copy_bw");
  EXPECT_TRUE(rl.note.empty());
  auto no_bytes = timed_case("bfloat16");
  no_bytes.bytes.reset();
  const auto compute_only = report::case_roofline(no_bytes, &cal);
  EXPECT_DOUBLE_EQ(*compute_only.roofline_fraction, 0.2);
  EXPECT_EQ(compute_only.basis, "bf16");
}

TEST(Roofline, Float32UsesTheFp32Peak) {
  const auto cal = peaks();
  const auto rl = report::case_roofline(timed_case("float32"), &cal);
  // max(2e12 / 5e13, 1 ms) = 40 ms: a 10 ms run is 4x faster than the fp32 roofline
  EXPECT_DOUBLE_EQ(*rl.roofline_fraction, 4.0);
  EXPECT_EQ(rl.peak, "fp32");
}

TEST(Roofline, UnknownDtypeOrUncalibratedPeakUsesBytesOnly) {
  const auto cal = peaks();
  for (const std::string dtype : {"", "int8", "float64"}) {
    const auto rl = report::case_roofline(timed_case(dtype), &cal);
    ASSERT_TRUE(rl.roofline_fraction) << dtype;
    EXPECT_DOUBLE_EQ(*rl.roofline_fraction, 0.1) << dtype;  // 1 ms of 10 ms
    EXPECT_EQ(rl.peak, "") << dtype;
    EXPECT_EQ(rl.basis, "copy_bw") << dtype;
    EXPECT_FALSE(rl.note.empty()) << dtype;
  }
}

TEST(Roofline, WithoutCalibrationOrTimingNoFraction) {
  const auto rl = report::case_roofline(timed_case("bfloat16"), nullptr);
  EXPECT_TRUE(rl.achieved_flops);
  EXPECT_FALSE(rl.roofline_fraction);
  auto untimed = timed_case("bfloat16");
  untimed.cand_ms.reset();
  const auto cal = peaks();
  const auto none = report::case_roofline(untimed, &cal);
  EXPECT_FALSE(none.achieved_flops || none.achieved_bytes_per_s || none.roofline_fraction);
}

store::Result result_with(const std::vector<store::CaseResult>& cases) {
  store::Result r;
  r.run_id = 3;
  r.method = "m";
  r.task = "Math/matmul";
  r.category = "Math";
  r.status = "passed";
  r.cases_total = r.cases_passed = static_cast<int>(cases.size());
  r.speedup = 1.25;
  r.cases = cases;
  return r;
}

TEST(Roofline, BestFractionOverPassedCases) {
  auto slow = timed_case("bfloat16");
  slow.cand_ms = 20.0;  // 0.1
  auto failed = timed_case("bfloat16");
  failed.cand_ms = 1.0;  // would be 2.0, but it failed
  failed.status = "mismatch";
  const auto cal = peaks();
  const auto best =
      report::best_roofline(result_with({slow, timed_case("bfloat16"), failed}), &cal);
  ASSERT_TRUE(best);
  EXPECT_DOUBLE_EQ(*best, 0.2);
  EXPECT_FALSE(report::best_roofline(result_with({slow}), nullptr));
}

report::RunCalibrations calibrated_run() {
  report::RunCalibrations cals;
  cals[3] = {"fp", peaks(), "fingerprint"};
  return cals;
}

TEST(Report, JsonHasAchievedRatesAndRooflineFraction) {
  const auto doc =
      json::parse(report::results_json({result_with({timed_case("bfloat16")})}, calibrated_run()));
  const auto& c = doc["results"][0]["cases"][0];
  EXPECT_DOUBLE_EQ(c["achieved_flops"].get<double>(), 2e14);
  EXPECT_DOUBLE_EQ(c["achieved_bytes_per_s"].get<double>(), 1e11);
  EXPECT_DOUBLE_EQ(c["roofline_fraction"].get<double>(), 0.2);
  EXPECT_EQ(c["roofline_peak"], "bf16+copy_bw");
  EXPECT_EQ(c["dtype"], "bfloat16");
  EXPECT_DOUBLE_EQ(doc["results"][0]["best_roofline_fraction"].get<double>(), 0.2);
  const auto& run = doc["runs"][0];
  EXPECT_EQ(run["run_id"], 3);
  EXPECT_EQ(run["fingerprint"], "fp");
  EXPECT_EQ(run["calibration"]["id"], 5);
  EXPECT_EQ(run["calibration"]["matched_by"], "fingerprint");
  EXPECT_DOUBLE_EQ(run["calibration"]["peaks"]["bf16"].get<double>(), 1e15);

  const auto bare = json::parse(report::results_json({result_with({timed_case("bfloat16")})}));
  EXPECT_TRUE(bare["results"][0]["cases"][0].contains("achieved_flops"));
  EXPECT_FALSE(bare["results"][0]["cases"][0].contains("roofline_fraction"));
  EXPECT_TRUE(bare["runs"][0]["calibration"].is_null());
}

TEST(Report, TableAndMarkdownShowRooflineWhenCalibrated) {
  const std::vector<store::Result> rows = {result_with({timed_case("bfloat16")})};
  const auto table = report::results_table(rows, calibrated_run());
  EXPECT_NE(table.find("roofline"), std::string::npos);
  EXPECT_NE(table.find("20.0%"), std::string::npos);
  EXPECT_NE(table.find("run 3: roofline against calibration 5 (cuda NVIDIA H200"),
            std::string::npos);
  const auto md = report::results_markdown(rows, "t", calibrated_run());
  EXPECT_NE(md.find("| speedup | roofline | detail |"), std::string::npos);
  EXPECT_NE(md.find("| 20.0% |"), std::string::npos);

  const auto plain = report::results_table(rows);
  EXPECT_EQ(plain.find("roofline "), std::string::npos);
  EXPECT_NE(plain.find("no calibration: run kbx calibrate"), std::string::npos);
  EXPECT_EQ(report::results_markdown(rows, "t").find("roofline |"), std::string::npos);
}

}  // namespace
}  // namespace kbx
