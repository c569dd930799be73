#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <utility>

#include "common/error.h"
#include "test_util.h"
#include "verdict/case_judge.h"
#include "verdict/compare.h"

namespace kbx {
namespace {
using test::f32;
using test::f64;
using verdict::Status;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

suite::Contract shadow_contract() {
  return suite::Contract{};
}

TEST(Compare, IdenticalToReferencePasses) {
  auto s = f64("out", {1.0, 2.0, 3.0000001});
  auto r = f32("out", {1.0f, 2.0f, 3.0000001f});
  auto v = verdict::compare_leaf(r, r, &s, shadow_contract());
  EXPECT_EQ(v.status, Status::Passed);
  EXPECT_LE(v.ratio, 1.0);
}

TEST(Compare, YieldsBetweenChunksOfALargeTensor) {
  std::vector<float> values(3u << 20);
  std::vector<double> shadow(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i % 977), shadow[i] = i % 977;
  auto r = f32("out", values);
  auto s = f64("out", shadow);
  std::atomic<int> yields{0};
  auto v = verdict::compare_leaf(r, r, &s, shadow_contract(), false, [&] { ++yields; });
  EXPECT_EQ(v.status, Status::Passed);
  EXPECT_GE(yields.load(), static_cast<int>(values.size() >> 15));  // once per 32768 values
  yields = 0;
  suite::Contract exact;
  exact.tolerance = suite::Tolerance::Exact;
  verdict::compare_leaf(r, f32("out", std::vector<float>(values.size(), 1.0f)), nullptr, exact,
                        false, [&] { ++yields; });
  EXPECT_GT(yields.load(), 0);
}

// A shadow stored as its float32 difference from a float32 reference (the reference worker's
// shadow_minus_ref) judges as the float64 shadow does: the same ratio for a close candidate, the
// same failure for a far one, per element too.
TEST(Compare, AShadowStoredAsItsDifferenceFromTheReferenceJudgesAsTheShadow) {
  std::vector<double> shadow;
  std::vector<float> ref, near, far, diff;
  for (int i = 0; i < 4096; ++i) {
    const double x = std::sin(0.37 * i) * std::pow(10.0, (i % 9) - 4);
    shadow.push_back(x);
    ref.push_back(static_cast<float>(x * (1 + 3e-7 * ((i % 5) - 2))));  // PyTorch's own error
    near.push_back(std::nextafter(ref.back(), 2.0f * ref.back()));
    far.push_back(static_cast<float>(x * 1.001));
    diff.push_back(static_cast<float>(x - static_cast<double>(ref.back())));
  }
  const auto s = f64("out", shadow), d = f32("out", diff), r = f32("out", ref);
  const auto minus_ref = verdict::ShadowForm::MinusRef;
  for (bool per_element : {false, true}) {
    for (const auto& c : {r, f32("out", near), f32("out", far)}) {
      const auto with_values = verdict::compare_leaf(c, r, &s, shadow_contract(), per_element);
      const auto with_diff =
          verdict::compare_leaf(c, r, &d, shadow_contract(), per_element, {}, minus_ref);
      EXPECT_EQ(with_diff.status, with_values.status) << with_diff.detail;
      EXPECT_NEAR(with_diff.ratio, with_values.ratio, 1e-5 * with_values.ratio);
    }
  }
  EXPECT_EQ(verdict::compare_leaf(f32("out", far), r, &s, shadow_contract()).status,
            Status::NumericalMismatch);
  // read as values, the difference would let the far candidate pass
  EXPECT_EQ(verdict::compare_leaf(f32("out", far), r, &d, shadow_contract()).status,
            Status::Passed);
}

TEST(Compare, SmallErrorWithinRatioPasses) {
  auto s = f64("out", {1.0, 2.0, 4.0});
  auto r = f32("out", {1.0f, 2.0f, 4.0f});  // exact: floor decides
  auto c = f32("out", {1.0f, 2.0f, 4.0f + 4 * 2.4e-7f});
  auto v = verdict::compare_leaf(c, r, &s, shadow_contract());
  EXPECT_EQ(v.status, Status::Passed) << v.detail;
  EXPECT_GT(v.ratio, 0.0);
}

TEST(Compare, LargeErrorFailsWithRatio) {
  auto s = f64("out", {1.0, 2.0, 4.0});
  auto r = f32("out", {1.0f, 2.0f, 4.0f});
  auto c = f32("out", {1.0f, 2.0f, 4.01f});
  auto v = verdict::compare_leaf(c, r, &s, shadow_contract());
  EXPECT_EQ(v.status, Status::NumericalMismatch);
  EXPECT_GT(v.ratio, 1000.0);
  EXPECT_NE(v.detail.find("error ratio"), std::string::npos);
}

TEST(Compare, ErrorScaledByPyTorchsOwnError) {
  // PyTorch itself is off by 1e-3 here; a candidate off by 5e-3 is within 10x.
  auto s = f64("out", {1.0, 1.0});
  auto r = f32("out", {1.001f, 1.0f});
  auto c = f32("out", {1.005f, 1.0f});
  EXPECT_EQ(verdict::compare_leaf(c, r, &s, shadow_contract()).status, Status::Passed);
  auto far = f32("out", {1.02f, 1.0f});
  EXPECT_EQ(verdict::compare_leaf(far, r, &s, shadow_contract()).status, Status::NumericalMismatch);
}

TEST(Compare, NanPositionsMustMatch) {
  auto s = f64("out", {kNaN, 1.0});
  auto r = f32("out", {NAN, 1.0f});
  EXPECT_EQ(verdict::compare_leaf(r, r, &s, shadow_contract()).status, Status::Passed);
  auto c = f32("out", {0.0f, 1.0f});
  EXPECT_EQ(verdict::compare_leaf(c, r, &s, shadow_contract()).status, Status::NonfiniteMismatch);
  auto c2 = f32("out", {NAN, NAN});
  EXPECT_EQ(verdict::compare_leaf(c2, r, &s, shadow_contract()).status, Status::NonfiniteMismatch);
}

TEST(Compare, InfSignMustMatch) {
  auto s = f64("out", {kInf, 1.0});
  auto r = f32("out", {INFINITY, 1.0f});
  auto c = f32("out", {-INFINITY, 1.0f});
  EXPECT_EQ(verdict::compare_leaf(c, r, &s, shadow_contract()).status, Status::NonfiniteMismatch);
}

TEST(Compare, FiniteWherePyTorchOverflowedButFloat64IsFiniteIsJudgedOnValue) {
  auto s = f64("out", {3.0e38, 1.0});
  auto r = f32("out", {INFINITY, 1.0f});
  auto c = f32("out", {3.0e38f, 1.0f});
  EXPECT_EQ(verdict::compare_leaf(c, r, &s, shadow_contract()).status, Status::Passed);
}

TEST(Compare, ShapeAndDtypeAreExact) {
  auto s = f64("out", {1.0, 2.0});
  auto r = f32("out", {1.0f, 2.0f});
  auto wrong_shape = f32("out", {1.0f, 2.0f}, {2, 1});
  EXPECT_EQ(verdict::compare_leaf(wrong_shape, r, &s, shadow_contract()).status,
            Status::ShapeMismatch);
  auto wrong_dtype = f64("out", {1.0, 2.0});
  EXPECT_EQ(verdict::compare_leaf(wrong_dtype, r, &s, shadow_contract()).status,
            Status::DtypeMismatch);
}

TEST(Compare, IntegersAreExact) {
  auto r = test::i64("out", {3, 1, 4});
  EXPECT_EQ(verdict::compare_leaf(r, r, nullptr, shadow_contract()).status, Status::Passed);
  auto c = test::i64("out", {3, 1, 5});
  auto v = verdict::compare_leaf(c, r, nullptr, shadow_contract());
  EXPECT_EQ(v.status, Status::NumericalMismatch);
  EXPECT_NE(v.detail.find("1 of 3"), std::string::npos);
}

TEST(Compare, AllcloseUsesRtolAtol) {
  suite::Contract k;
  k.tolerance = suite::Tolerance::Allclose;
  k.rtol = 1e-3;
  k.atol = 0;
  auto r = f32("out", {100.0f});
  EXPECT_EQ(verdict::compare_leaf(f32("out", {100.05f}), r, nullptr, k).status, Status::Passed);
  EXPECT_EQ(verdict::compare_leaf(f32("out", {100.5f}), r, nullptr, k).status,
            Status::NumericalMismatch);
}

TEST(TensorFile, RoundTripAndHalfConversions) {
  test::TempDir dir;
  verdict::Tensor h;
  h.name = "h";
  h.dtype = verdict::DType::F16;
  h.shape = {3};
  // 1.0, -2.0, +inf in IEEE half
  for (std::uint16_t bits : {0x3C00, 0xC000, 0x7C00}) {
    h.bytes.push_back(bits & 0xFF);
    h.bytes.push_back(bits >> 8);
  }
  verdict::Tensor b;
  b.name = "b";
  b.dtype = verdict::DType::BF16;
  b.shape = {1};
  b.bytes = {0xC0, 0x3F};  // 1.5 in bfloat16
  auto path = dir.path() / "x.kbt";
  verdict::write_tensor_file(path, {h, b, f32("f", {0.5f})});
  auto file = verdict::read_tensor_file(path);
  ASSERT_EQ(file.tensors.size(), 3u);
  auto hv = file.find("h")->to_doubles();
  EXPECT_EQ(hv[0], 1.0);
  EXPECT_EQ(hv[1], -2.0);
  EXPECT_TRUE(std::isinf(hv[2]));
  EXPECT_EQ(file.find("b")->to_doubles()[0], 1.5);
  EXPECT_TRUE(file.find("f")->bitwise_equal(f32("f", {0.5f})));
}

// Every float16 converts as the plain formula says: value mant * 2^(exp - 25) (subnormals
// mant * 2^-24), the sign applied last; infinities, and a NaN of either sign without its payload.
TEST(TensorFile, EveryHalfConvertsExactly) {
  verdict::Tensor h;
  h.name = "h";
  h.dtype = verdict::DType::F16;
  h.shape = {65536};
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    h.bytes.push_back(bits & 0xFF);
    h.bytes.push_back(bits >> 8);
  }
  const auto values = h.to_doubles();
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    const int exp = (bits >> 10) & 0x1F, mant = bits & 0x3FF;
    double v = exp == 0    ? std::ldexp(mant, -24)
               : exp == 31 ? (mant ? kNaN : kInf)
                           : std::ldexp(mant + 1024, exp - 25);
    if (bits >> 15) v = -v;
    std::uint64_t want, got;
    std::memcpy(&want, &v, 8);
    std::memcpy(&got, &values[bits], 8);
    ASSERT_EQ(got, want) << "float16 bits " << bits;
  }
}

TEST(TensorFile, TruncatedFileIsAnError) {
  test::TempDir dir;
  auto path = dir.path() / "x.kbt";
  verdict::write_tensor_file(path, {f32("f", {1, 2, 3, 4})});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
  EXPECT_THROW(verdict::read_tensor_file(path), Error);
}

class CaseJudge : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = dir_.path() / "c";
    verdict::write_tensor_file(base_.string() + ".in.kbt", {f32("arg0", {1, 2, 3})});
    verdict::write_tensor_file(base_.string() + ".ref.kbt", {f32("out", {2, 4, 6})});
    verdict::write_tensor_file(base_.string() + ".shadow.kbt", {f64("out", {2, 4, 6})});
    ref_ev_ = {{"structure", "single"},
               {"outputs", {{{"name", "out"}, {"kind", "tensor"}, {"alias", nullptr}}}}};
  }
  verdict::CaseVerdict judge(const std::vector<float>& out, const std::vector<float>& in_after,
                             nlohmann::json cand_meta = nullptr) {
    verdict::write_tensor_file(base_.string() + ".cand.kbt", {f32("out", out)});
    verdict::write_tensor_file(base_.string() + ".cand_after.kbt", {f32("arg0", in_after)});
    if (cand_meta.is_null()) {
      cand_meta = {{"structure", "single"},
                   {"outputs", {{{"name", "out"}, {"kind", "tensor"}, {"device", "cpu"}}}}};
    }
    return verdict::judge_case({base_, base_, ref_ev_, cand_meta}, suite::Contract{}, "cpu");
  }
  test::TempDir dir_;
  std::filesystem::path base_;
  nlohmann::json ref_ev_;
};

// A fresh twin (fresh values written into the timed tensors) that fails while its base case
// passed: stale_result only when its result is the base values' answer; an honest kernel whose
// error on the new values is beyond its allowance keeps its own verdict (session 24:
// torch.compile's nll_loss, error ratio 31 on its twin, had been called a cached result).
class FreshTwin : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = dir_.path() / "p";
    twin_ = dir_.path() / "p__fresh";
    write_ref(base_, {1, 2, 3});
    write_ref(twin_, {5, 6, 7});
    ev_ = {{"structure", "single"},
           {"outputs", {{{"name", "out"}, {"kind", "tensor"}, {"alias", nullptr}}}}};
    cand_ev_ = {{"structure", "single"},
                {"outputs", {{{"name", "out"}, {"kind", "tensor"}, {"device", "cpu"}}}}};
  }
  static void write_ref(const std::filesystem::path& base, const std::vector<float>& in) {
    std::vector<float> out;
    std::vector<double> shadow;
    for (float x : in) out.push_back(2 * x), shadow.push_back(2.0 * x);
    verdict::write_tensor_file(base.string() + ".in.kbt", {f32("arg0", in)});
    verdict::write_tensor_file(base.string() + ".ref.kbt", {f32("out", out)});
    verdict::write_tensor_file(base.string() + ".shadow.kbt", {f64("out", shadow)});
  }
  /// The twin's verdict when the candidate's twin call returned `out`.
  verdict::CaseVerdict twin(const std::vector<float>& out) {
    verdict::write_tensor_file(twin_.string() + ".cand.kbt", {f32("out", out)});
    const auto own = verdict::judge_case({twin_, twin_, ev_, cand_ev_}, suite::Contract{}, "cpu");
    EXPECT_NE(own.status, Status::Passed);
    return verdict::fresh_twin_verdict(own, "p", {base_, twin_, ev_, cand_ev_, base_},
                                       suite::Contract{}, "cpu");
  }
  test::TempDir dir_;
  std::filesystem::path base_, twin_;
  nlohmann::json ev_, cand_ev_;
};

TEST_F(FreshTwin, TheOldValuesAnswerIsAStaleResult) {
  const auto v = twin({2, 4, 6});
  EXPECT_EQ(v.status, Status::StaleResult);
  EXPECT_NE(v.detail.find("cached"), std::string::npos) << v.detail;
}

TEST_F(FreshTwin, AnInaccurateAnswerToTheNewValuesKeepsItsOwnVerdict) {
  const auto v = twin({10.01f, 12, 14});
  EXPECT_EQ(v.status, Status::NumericalMismatch);
  EXPECT_NE(v.detail.find("fresh values of p's shapes"), std::string::npos) << v.detail;
  EXPECT_EQ(v.detail.find("cached"), std::string::npos) << v.detail;
}

TEST_F(FreshTwin, AnAnswerToNeitherIsNotCalledCached) {
  const auto v = twin({0, 0, 0});
  EXPECT_EQ(v.status, Status::NumericalMismatch);
}

TEST_F(CaseJudge, CorrectPasses) {
  EXPECT_EQ(judge({2, 4, 6}, {1, 2, 3}).status, Status::Passed);
}

// A small result computed from many inputs that fails the shadow rule normwise says what kbx
// asks of a long reduction (docs/task-format.md); a small one from few inputs does not, nor does
// a result that passes.
TEST_F(CaseJudge, ALongReductionsFailureSaysHowToMeetTheContract) {
  const auto plain = judge({2, 4, 7}, {1, 2, 3});
  ASSERT_EQ(plain.status, verdict::Status::NumericalMismatch);
  EXPECT_EQ(plain.detail.find("long reduction"), std::string::npos) << plain.detail;
  ref_ev_["inputs"] = {{"arg0", {{"dtype", "float32"}, {"shape", {1024, 1024}}}},
                       {"index", {{"dtype", "int64"}, {"shape", {1 << 30}}}}};
  const auto longer = judge({2, 4, 7}, {1, 2, 3});
  ASSERT_EQ(longer.status, verdict::Status::NumericalMismatch);
  EXPECT_NE(longer.detail.find("error ratio"), std::string::npos) << longer.detail;
  // 1M floating inputs over 3 result elements (the integer input does not count)
  EXPECT_NE(longer.detail.find("a long reduction (about 349525 inputs per result element)"),
            std::string::npos)
      << longer.detail;
  EXPECT_EQ(judge({2, 4, 6}, {1, 2, 3}).status, verdict::Status::Passed);
  ref_ev_["inputs"] = {{"arg0", {{"dtype", "bfloat16"}, {"shape", {3, 1000}}}}};
  EXPECT_EQ(judge({2, 4, 7}, {1, 2, 3}).detail.find("long reduction"), std::string::npos);
}

TEST_F(CaseJudge, MutatedInputIsCaught) {
  auto v = judge({2, 4, 6}, {0, 0, 0});
  EXPECT_EQ(v.status, Status::InputMutation);
  EXPECT_NE(v.detail.find("arg0"), std::string::npos);
}

TEST_F(CaseJudge, StructureMismatch) {
  auto v = judge({2, 4, 6}, {1, 2, 3},
                 {{"structure", "tuple[1]"},
                  {"outputs", {{{"name", "out.0"}, {"kind", "tensor"}, {"device", "cpu"}}}}});
  EXPECT_EQ(v.status, Status::ShapeMismatch);
}

TEST_F(CaseJudge, WrongDeviceAndAliasAndSubclassAreViolations) {
  auto dev = judge({2, 4, 6}, {1, 2, 3},
                   {{"structure", "single"},
                    {"outputs", {{{"name", "out"}, {"kind", "tensor"}, {"device", "cuda"}}}}});
  EXPECT_EQ(dev.status, Status::OutputViolation);
  auto alias = judge(
      {2, 4, 6}, {1, 2, 3},
      {{"structure", "single"},
       {"outputs", {{{"name", "out"}, {"kind", "tensor"}, {"device", "cpu"}, {"alias", "arg0"}}}}});
  EXPECT_EQ(alias.status, Status::OutputViolation);
  auto sub =
      judge({2, 4, 6}, {1, 2, 3},
            {{"structure", "single"},
             {"outputs", {{{"name", "out"}, {"kind", "tensor_subclass"}, {"cls", "Lazy"}}}}});
  EXPECT_EQ(sub.status, Status::OutputViolation);
}

TEST_F(CaseJudge, SyntheticZerosFail) {
  verdict::TensorFile zeros{{f32("out", {0, 0, 0})}};
  EXPECT_EQ(
      verdict::judge_synthetic({base_, base_, ref_ev_, ref_ev_}, zeros, suite::Contract{}).status,
      Status::NumericalMismatch);
}

/// An in-place task: the reference updates `state` and returns it (`same_as`), so its value
/// travels only in the inputs-after files.
class InPlaceCaseJudge : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = dir_.path() / "p";
    verdict::write_tensor_file(base_.string() + ".in.kbt", {f32("state", {1, 2, 3})});
    verdict::write_tensor_file(base_.string() + ".ref.kbt", {});
    verdict::write_tensor_file(base_.string() + ".ref_after.kbt", {f32("state", {2, 3, 4})});
    verdict::write_tensor_file(base_.string() + ".shadow.kbt", {});
    verdict::write_tensor_file(base_.string() + ".shadow_after.kbt", {f64("state", {2, 3, 4})});
    ref_ev_ = {{"structure", "single"},
               {"outputs",
                {{{"name", "out"}, {"kind", "tensor"}, {"alias", "state"}, {"same_as", "state"}}}}};
  }
  /// The candidate returns its updated input (same_as) unless `out` is given.
  verdict::CaseVerdict judge(const std::vector<float>& after,
                             const std::optional<std::vector<float>>& out = std::nullopt) {
    nlohmann::json leaf = {
        {"name", "out"}, {"kind", "tensor"}, {"device", "cpu"}, {"alias", "state"}};
    std::vector<verdict::Tensor> outs;
    if (out) {
      outs.push_back(f32("out", *out));
    } else {
      leaf["same_as"] = "state";
    }
    verdict::write_tensor_file(base_.string() + ".cand.kbt", outs);
    std::vector<verdict::Tensor> changed;
    if (!after.empty()) changed.push_back(f32("state", after));
    verdict::write_tensor_file(base_.string() + ".cand_after.kbt", changed);
    nlohmann::json cand = {{"structure", "single"}, {"outputs", {leaf}}};
    return verdict::judge_case({base_, base_, ref_ev_, cand}, suite::Contract{}, "cpu");
  }
  test::TempDir dir_;
  std::filesystem::path base_;
  nlohmann::json ref_ev_;
};

TEST_F(InPlaceCaseJudge, UpdatedAndReturnedPasses) {
  EXPECT_EQ(judge({2, 3, 4}).status, Status::Passed);
}

TEST_F(InPlaceCaseJudge, WrongUpdateFails) {
  auto v = judge({2, 3, 9});
  EXPECT_EQ(v.status, Status::NumericalMismatch);
  EXPECT_NE(v.detail.find("state"), std::string::npos);
}

TEST_F(InPlaceCaseJudge, ReturningTheUnchangedInputFails) {
  EXPECT_EQ(judge({}).status, Status::NumericalMismatch);
}

TEST_F(InPlaceCaseJudge, FreshOutputIsJudgedAgainstTheUpdatedInput) {
  EXPECT_EQ(judge({2, 3, 4}, std::vector<float>{2, 3, 4}).status, Status::Passed);
  EXPECT_EQ(judge({2, 3, 4}, std::vector<float>{0, 0, 0}).status, Status::NumericalMismatch);
}

TEST_F(InPlaceCaseJudge, ReferenceOutputsIncludeTheUpdatedInput) {
  auto outs = verdict::reference_outputs({base_, base_, ref_ev_, ref_ev_});
  ASSERT_NE(outs.find("out"), nullptr);
  EXPECT_EQ(outs.find("out")->numel(), 3);
}

/// x + 3y with x near -3y (one element): PyTorch's fused multiply-add is exact, a kernel that
/// multiplies, then adds, is off by the product's rounding: far beyond 10x PyTorch's zero error
/// and 4 ulps of the tiny result, within what a rounding of the inputs moves the result.
TEST(Compare, SensitivityFloorsTheNormwiseRatios) {
  const double x = 1.625165581703186,
               y = -0.541300356388092;  // float32 values (a seed of Math/add)
  const double exact = x + 3 * y;
  const float fused = static_cast<float>(exact);
  volatile float product = 3 * static_cast<float>(y);  // rounded here, never contracted
  const float unfused = static_cast<float>(x) + product;
  ASSERT_NE(fused, unfused);
  auto r = f32("out", {fused});
  auto c = f32("out", {unfused});
  auto s = f64("out", {exact});
  EXPECT_EQ(verdict::compare_leaf(c, r, &s, shadow_contract()).status, Status::NumericalMismatch);
  // a rounding of the inputs moves the result 1e-7 (the terms |x| + 3|y| are larger)
  const verdict::Sensitivity floor{1e-7, 1e-7 / std::fabs(exact)};
  auto v = verdict::compare_leaf(c, r, &s, shadow_contract(), false, {},
                                 verdict::ShadowForm::Values, floor);
  EXPECT_EQ(v.status, Status::Passed) << v.detail;
  // ten times the floor is the limit: an answer off by 2e-6 still fails, naming the floor
  auto far = f32("out", {static_cast<float>(exact + 2e-6)});
  v = verdict::compare_leaf(far, r, &s, shadow_contract(), false, {}, verdict::ShadowForm::Values,
                            floor);
  EXPECT_EQ(v.status, Status::NumericalMismatch);
  EXPECT_NE(v.detail.find("small-result floor 1e-07"), std::string::npos) << v.detail;
}

TEST(Compare, SensitivityLeavesThePerElementRuleAlone) {
  // special values are judged element by element; a large floor does not loosen that rule
  auto r = f32("out", {1e30f, 1.0f});
  auto s = f64("out", {1e30, 1.0});
  const verdict::Sensitivity floor{1e25, 1.0};
  auto v = verdict::compare_leaf(f32("out", {1e30f, 1.001f}), r, &s, shadow_contract(), true, {},
                                 verdict::ShadowForm::Values, floor);
  EXPECT_EQ(v.status, Status::NumericalMismatch);
}

/// The shadow rule's ratio and max |err| computed plainly: every element classified, the sums in
/// flat-index order (one thread: the tensors below are under the size that splits a comparison).
/// compare_leaf takes a faster path for blocks of finite values; it must give the same bits.
std::pair<double, double> plain_shadow_ratio(const std::vector<float>& cand,
                                             const std::vector<float>& ref,
                                             const std::vector<double>& shadow,
                                             const suite::Contract& k, bool per_element,
                                             const verdict::Sensitivity& floor) {
  double scale = 0, err_c = 0, err_r = 0, sq_c = 0, sq_r = 0, norm_c = 0, norm_r = 0, elem = 0;
  const double eps = std::numeric_limits<float>::epsilon();
  for (size_t i = 0; i < shadow.size(); ++i) {
    const double c = cand[i], r = ref[i], s = shadow[i];
    if (!std::isfinite(s)) continue;
    scale = std::max(scale, std::fabs(s));
    if (std::isfinite(c)) {
      const double e = std::fabs(c - s);
      err_c = std::max(err_c, e), sq_c += e * e, norm_c += s * s;
    }
    if (std::isfinite(r)) {
      const double e = std::fabs(r - s);
      err_r = std::max(err_r, e), sq_r += e * e, norm_r += s * s;
    }
    if (per_element && std::isfinite(c)) {
      const double own = std::isfinite(r) ? std::fabs(r - s) : 0.0;
      elem = std::max(
          elem, std::fabs(c - s) / std::max(own, k.ulp_floor * eps * std::max(std::fabs(s), 1.0)));
    }
  }
  const double l2_c = std::sqrt(sq_c) / (norm_c > 0 ? std::sqrt(norm_c) : 1.0);
  const double l2_r = std::sqrt(sq_r) / (norm_r > 0 ? std::sqrt(norm_r) : 1.0);
  const double ratio_inf =
      err_c / std::max({err_r, k.ulp_floor * eps * (scale == 0 ? 1 : scale), floor.max_abs});
  const double ratio_l2 = l2_c / std::max({l2_r, k.ulp_floor * eps, floor.rel_l2});
  return {std::max({ratio_inf, ratio_l2, elem}), err_c};
}

// Three chunks of 32768 values and a bit: special values (where candidate, reference and shadow
// agree on them, or the reference alone has one) only in the middle chunk, so that the blocks
// around it take the fast path for finite values and those in it the general one. The middle
// chunk's values are smaller than the others' (the maxima come from the fast path) or larger
// (from the general one); one run has errors too large to square in the first chunk, which sends
// every block after it the general way. Huge floors single out each part of the ratio: the
// normwise one, the maxima (the scale, with the ulp floor), the per-element one.
TEST(Compare, TheFastPathForFiniteValuesGivesTheGeneralResult) {
  const size_t n = 3 * 32768 + 1234;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> unit(-1, 1);
  suite::Contract no_ulp_floor;
  no_ulp_floor.ulp_floor = 0;
  struct Setting {
    suite::Contract k;
    bool per_element;
    verdict::Sensitivity floor;
  };
  const Setting settings[] = {
      {shadow_contract(), false, {}},         {shadow_contract(), true, {}},
      {no_ulp_floor, false, {1e300, 0}},      {no_ulp_floor, false, {0, 1e300}},
      {shadow_contract(), false, {0, 1e300}}, {shadow_contract(), true, {1e300, 1e300}},
  };
  for (auto [huge, middle_scale] : {std::pair{false, 0.1}, {false, 10.0}, {true, 0.1}}) {
    std::vector<double> shadow(n);
    std::vector<float> ref(n), cand(n);
    for (size_t i = 0; i < n; ++i) {
      const bool middle = i >= 32768 && i < 2 * 32768;
      shadow[i] =
          unit(rng) * std::pow(10.0, static_cast<int>(i % 11) - 5) * (middle ? middle_scale : 1.0);
      ref[i] = static_cast<float>(shadow[i] * (1 + 1e-7 * unit(rng)));
      cand[i] = static_cast<float>(shadow[i] * (1 + 3e-7 * unit(rng)));
      if (middle && i % 997 == 0) {
        const double special = i % 3 == 0 ? kNaN : (i % 3 == 1 ? kInf : -kInf);
        shadow[i] = special, ref[i] = static_cast<float>(special);
        cand[i] = static_cast<float>(special);
      } else if (middle && i % 1009 == 0) {
        ref[i] = static_cast<float>(kInf);  // PyTorch overflowed where float64 did not
      }
    }
    if (huge) cand[5000] = 1e30f, ref[5000] = static_cast<float>(kInf), shadow[5000] = 1e300;
    auto c = f32("out", cand), r = f32("out", ref);
    auto s = f64("out", shadow);
    for (const auto& [k, per_element, floor] : settings) {
      SCOPED_TRACE(testing::Message()
                   << "huge " << huge << ", middle x" << middle_scale << ", per_element "
                   << per_element << ", ulp_floor " << k.ulp_floor << ", floors " << floor.max_abs
                   << " " << floor.rel_l2);
      const auto v =
          verdict::compare_leaf(c, r, &s, k, per_element, {}, verdict::ShadowForm::Values, floor);
      const auto [ratio, max_abs_err] =
          plain_shadow_ratio(cand, ref, shadow, k, per_element, floor);
      EXPECT_NE(v.status, Status::NonfiniteMismatch);
      EXPECT_EQ(v.ratio, ratio);
      EXPECT_EQ(v.max_abs_err, max_abs_err);
    }
  }
}

/// A full-size case whose reference kept no inputs file (lean_inputs): its event says
/// `in_file` false and lists the inputs; the candidate's worker sends back only changed inputs.
class LeanCaseJudge : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = dir_.path() / "l";
    verdict::write_tensor_file(base_.string() + ".ref.kbt", {f32("out", {2, 4, 6})});
    verdict::write_tensor_file(base_.string() + ".shadow.kbt", {f64("out", {2, 4, 6})});
    ref_ev_ = {{"structure", "single"},
               {"in_file", false},
               {"inputs", {{"arg0", {{"dtype", "float32"}, {"shape", {3}}}}}},
               {"outputs", {{{"name", "out"}, {"kind", "tensor"}, {"alias", nullptr}}}}};
  }
  verdict::CaseVerdict judge(const std::vector<float>& out,
                             const std::vector<verdict::Tensor>& changed,
                             nlohmann::json leaf = nullptr) {
    if (leaf.is_null()) leaf = {{"name", "out"}, {"kind", "tensor"}, {"device", "cpu"}};
    std::vector<verdict::Tensor> outs;
    if (!leaf.contains("same_as")) outs.push_back(f32("out", out));
    verdict::write_tensor_file(base_.string() + ".cand.kbt", outs);
    verdict::write_tensor_file(base_.string() + ".cand_after.kbt", changed);
    nlohmann::json cand = {{"structure", "single"}, {"outputs", {leaf}}};
    return verdict::judge_case({base_, base_, ref_ev_, cand}, suite::Contract{}, "cpu");
  }
  test::TempDir dir_;
  std::filesystem::path base_;
  nlohmann::json ref_ev_;
};

TEST_F(LeanCaseJudge, CorrectWithoutTheInputsFilePasses) {
  ASSERT_FALSE(std::filesystem::exists(base_.string() + ".in.kbt"));
  EXPECT_EQ(judge({2, 4, 6}, {}).status, Status::Passed);
  EXPECT_EQ(judge({2, 4, 9}, {}).status, Status::NumericalMismatch);
}

TEST_F(LeanCaseJudge, AnyInputReportedChangedIsAMutation) {
  auto v = judge({2, 4, 6}, {f32("arg0", {0, 0, 0})});
  EXPECT_EQ(v.status, Status::InputMutation);
  EXPECT_NE(v.detail.find("arg0"), std::string::npos);
}

TEST_F(LeanCaseJudge, ANameThatIsNoInputIsIgnoredAsWithTheFile) {
  EXPECT_EQ(judge({2, 4, 6}, {f32("not_an_input", {0})}).status, Status::Passed);
}

TEST_F(LeanCaseJudge, AnOutputClaimedSameAsAnUnchangedInputIsMissing) {
  // an honest worker names only changed inputs in same_as; without the file there is nothing to
  // fill the leaf from, so it cannot pass
  auto v =
      judge({}, {}, {{"name", "out"}, {"kind", "tensor"}, {"device", "cpu"}, {"same_as", "arg0"}});
  EXPECT_EQ(v.status, Status::ShapeMismatch);
}

TEST_F(LeanCaseJudge, AnUpdatingReferenceWithoutItsInputsFileIsAnError) {
  verdict::write_tensor_file(base_.string() + ".ref_after.kbt", {f32("arg0", {1, 1, 1})});
  EXPECT_THROW(judge({2, 4, 6}, {}), std::exception);
}

TEST_F(LeanCaseJudge, TheEventsSensitivityReachesTheComparison) {
  // {2, 4, 6} against an answer off by 1e-3 in one element: beyond PyTorch's zero error and 4
  // ulps, within ten times a sensitivity of 2e-4
  EXPECT_EQ(judge({2, 4, 6.001f}, {}).status, Status::NumericalMismatch);
  const nlohmann::json floor = {{"inf", 2e-4}, {"l2", 1e-4}, {"moved", 1.0}, {"terms", 6.0}};
  ref_ev_["sensitivity"] = {{"out", floor}};
  EXPECT_EQ(judge({2, 4, 6.001f}, {}).status, Status::Passed);
  ref_ev_["sensitivity"] = {{"other", floor}};  // another leaf's
  EXPECT_EQ(judge({2, 4, 6.001f}, {}).status, Status::NumericalMismatch);
}

TEST_F(LeanCaseJudge, AMalformedSensitivityIsAnError) {
  ref_ev_["sensitivity"] = {{"out", {{"inf", -1.0}, {"l2", 0.0}}}};
  EXPECT_THROW(judge({2, 4, 6}, {}), std::runtime_error);
  ref_ev_["sensitivity"] = {{"out", {{"inf", 1.0}}}};  // no l2
  EXPECT_THROW(judge({2, 4, 6}, {}), std::runtime_error);
  ref_ev_["sensitivity"] = nlohmann::json::array({1, 2});
  EXPECT_THROW(judge({2, 4, 6}, {}), std::runtime_error);
}

}  // namespace
}  // namespace kbx
