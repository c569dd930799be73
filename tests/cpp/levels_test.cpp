// The per-element rule of special-value cases and the graded levels (docs/task-format.md).
#include "verdict/levels.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <vector>

#include "test_util.h"
#include "verdict/compare.h"

namespace kbx {
namespace {
using test::f32;
using test::f64;
using verdict::Level;
using verdict::Status;

// gelu over a special-value set: 0, 1, -1, a subnormal, FLT_MAX.
const std::vector<double> kGelu = {0.0, 0.8413447460685429, -0.15865525393145707, 7.0e-46 * 0.5,
                                   static_cast<double>(FLT_MAX)};

std::vector<float> as_floats(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

TEST(PerElement, WrongFiniteValuesAtSpecialInputsFail) {
  auto s = f64("out", kGelu);
  auto r = f32("out", as_floats(kGelu));
  auto bad = as_floats(kGelu);
  bad[1] = 1000.0f;  // +-1000 at +-1, 7 at a subnormal input
  bad[2] = -1000.0f;
  bad[3] = 7.0f;
  auto c = f32("out", bad);
  // Normwise, FLT_MAX sets the scale and the errors vanish under it.
  EXPECT_EQ(verdict::compare_leaf(c, r, &s, {}).status, Status::Passed);
  auto v = verdict::compare_leaf(c, r, &s, {}, /*per_element=*/true);
  EXPECT_EQ(v.status, Status::NumericalMismatch);
  EXPECT_NE(v.detail.find("3 elements"), std::string::npos) << v.detail;
}

TEST(PerElement, AbsoluteAccuracyNearZeroAndFlushedSubnormalsPass) {
  auto s = f64("out", kGelu);
  auto r = f32("out", as_floats(kGelu));
  auto ok = as_floats(kGelu);
  ok[1] += 2.4e-7f;  // 2 ulps at 0.84
  ok[3] = 0.0f;      // a subnormal result flushed to zero
  auto c = f32("out", ok);
  auto v = verdict::compare_leaf(c, r, &s, {}, true);
  EXPECT_EQ(v.status, Status::Passed) << v.detail;
}

TEST(PerElement, RelativeAboveOne) {
  auto s = f64("out", {1e30, 1.0});
  auto r = f32("out", {1e30f, 1.0f});
  EXPECT_EQ(verdict::compare_leaf(f32("out", {1.00001e30f, 1.0f}), r, &s, {}, true).status,
            Status::NumericalMismatch);  // 84 ulps
  EXPECT_EQ(verdict::compare_leaf(f32("out", {1.000001e30f, 1.0f}), r, &s, {}, true).status,
            Status::Passed);  // 8 ulps
}

store::CaseResult result(const char* status) {
  store::CaseResult c;
  c.status = status;
  return c;
}

struct Job {
  std::vector<store::CaseResult> results;
  std::vector<verdict::GradedCase> cases;
  void add(const char* name, const char* tier, bool in_kbx, const char* status) {
    results.push_back(result(status));
    cases.push_back({name, tier, in_kbx, nullptr});
  }
  void link() {
    for (size_t i = 0; i < cases.size(); ++i) {
      if (results[i].status != "missing") cases[i].result = &results[i];
    }
  }
  store::LevelVerdict at(Level l, Status job = Status::Passed, bool reject = false) {
    link();
    return verdict::grade(l, cases, job, reject);
  }
};

TEST(Levels, Float32OnlyKernelPassesKbxNotStrict) {
  Job j;
  j.add("special_f32", "edge", false, "nonfinite_mismatch");
  j.add("normal_f32", "small", true, "passed");
  j.add("uniform_f16", "small", false, "runtime_error");
  j.add("outliers_f32", "small", true, "passed");
  EXPECT_EQ(j.at(Level::Strict).status, "nonfinite_mismatch");
  EXPECT_EQ(j.at(Level::Core).status, "runtime_error");
  EXPECT_EQ(j.at(Level::Kbx).status, "passed");
  EXPECT_TRUE(j.at(Level::Kbx).values_ok);
  EXPECT_FALSE(j.at(Level::Core).values_ok);
}

TEST(Levels, TrackRulesKeepValuesOk) {
  Job j;
  j.add("normal_f32", "small", true, "no_triton_launch");
  j.add("perf", "full", false, "fallback");
  EXPECT_EQ(j.at(Level::Strict).status, "no_triton_launch");
  EXPECT_TRUE(j.at(Level::Strict).values_ok);
  Job k;
  k.add("normal_f32", "small", true, "passed");
  k.add("perf", "full", false, "fallback");
  // a fallback seen on a timed case holds at every level, the kbx one included
  EXPECT_EQ(k.at(Level::Kbx).status, "fallback");
  EXPECT_TRUE(k.at(Level::Kbx).values_ok);
  EXPECT_EQ(k.at(Level::Kbx, Status::Passed, true).status, "static_reject");
}

TEST(Levels, MissingCasesAndJobFailures) {
  Job j;
  j.add("a", "small", true, "passed");
  j.add("b", "small", true, "missing");
  EXPECT_EQ(j.at(Level::Core, Status::CudaError).status, "cuda_error");
  EXPECT_FALSE(j.at(Level::Core, Status::CudaError).values_ok);
  EXPECT_EQ(j.at(Level::Core).status, "harness_error");
  Job k;
  k.add("a", "small", true, "passed");
  EXPECT_EQ(k.at(Level::Kbx, Status::TimerTampered).status, "timer_tampered");
}

TEST(Levels, NoCaseInScopeIsJudgedAsCore) {
  Job j;
  j.add("special", "edge", false, "passed");
  j.add("normal_f16", "small", false, "numerical_mismatch");
  EXPECT_EQ(j.at(Level::Kbx).status, "numerical_mismatch");
}

}  // namespace
}  // namespace kbx
