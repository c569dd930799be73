#include <gtest/gtest.h>

#include "timing/guards.h"
#include "verdict/status.h"

namespace kbx {
namespace {

const std::map<std::string, double> kH200 = {{"copy_bw", 4.24e12}, {"fp32", 51.3e12},
                                             {"tf32", 357.9e12},   {"bf16", 794.2e12},
                                             {"fp16", 768.1e12},   {"int8", 1133.6e12}};

TEST(RooflineFloor, BytesAtTheCopyBandwidth) {
  const auto f = timing::roofline_floor(0, 4.24e9, "torch.float32", kH200);
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->ms, 1.0, 1e-9);
  EXPECT_EQ(f->basis, "copy_bw");
}

TEST(RooflineFloor, FlopsAtTheFastestPeakTheDtypeMayUse) {
  // float32 may run on TF32: the floor holds it to tf32, not the fp32 FMA rate.
  auto f = timing::roofline_floor(357.9e9, 0, "float32", kH200);
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->ms, 1.0, 1e-9);
  EXPECT_EQ(f->basis, "tf32");
  f = timing::roofline_floor(794.2e9, 1e3, "torch.float16", kH200);  // bf16 is the faster
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->ms, 1.0, 1e-9);
  EXPECT_EQ(f->basis, "bf16+copy_bw");
  f = timing::roofline_floor(1133.6e9, 0, "int8", kH200);
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->ms, 1.0, 1e-9);
}

TEST(RooflineFloor, TheLongerBoundWins) {
  const auto f = timing::roofline_floor(1e9, 8.48e9, "bfloat16", kH200);  // 2 ms of bytes
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->ms, 2.0, 1e-9);
}

TEST(RooflineFloor, NoPeakNoFloor) {
  EXPECT_FALSE(timing::roofline_floor(1e12, 0, "float64", kH200));  // no fp64 peak
  EXPECT_FALSE(timing::roofline_floor(1e12, 0, "", kH200));
  EXPECT_FALSE(timing::roofline_floor(0, 0, "float32", kH200));
  EXPECT_FALSE(timing::roofline_floor(1e12, 1e9, "float32", {}));
  // float64 with bytes: bytes only
  const auto f = timing::roofline_floor(1e12, 4.24e9, "float64", kH200);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->basis, "copy_bw");
}

TEST(RooflineFloor, MarginOfTenPercent) {
  const timing::RooflineFloor f{1.0, "copy_bw"};
  EXPECT_FALSE(timing::below_floor(1.0, f));   // at the roofline
  EXPECT_FALSE(timing::below_floor(0.95, f));  // 105%: within the margin
  EXPECT_FALSE(timing::below_floor(1.0 / 1.1 + 1e-9, f));
  EXPECT_TRUE(timing::below_floor(0.90, f));  // 111%
  EXPECT_TRUE(timing::below_floor(0.01, f));  // a cached answer
  EXPECT_FALSE(timing::below_floor(0.01, {0.0, ""}));
}

TEST(CacheSignature, FirstCallPerVariantSlowLaterFast) {
  // variants 1..3 each computed once (1 ms), then answered from memory (0.01 ms)
  std::vector<int> v = {1, 2, 3, 0, 2, 1, 3, 0, 1, 3, 2, 0};
  std::vector<double> ms;
  std::map<int, int> seen;
  for (int x : v) ms.push_back(x != 0 && seen[x]++ == 0 ? 1.0 : 0.01);
  const auto sig = timing::cache_signature(ms, v);
  ASSERT_TRUE(sig);
  EXPECT_NE(sig->find("3 sets of input values"), std::string::npos);
}

TEST(CacheSignature, HonestTimesAndNoiseAreNotFlagged) {
  std::vector<int> v = {1, 2, 3, 0, 2, 1, 3, 0, 1, 3, 2, 0};
  std::vector<double> flat(v.size(), 1.0);
  EXPECT_FALSE(timing::cache_signature(flat, v));
  // one slow first call (a hiccup) is not enough: every variant must show it
  auto one = flat;
  one[0] = 5.0;
  EXPECT_FALSE(timing::cache_signature(one, v));
  // tiny times: the gap must be at least 2 us
  std::vector<double> tiny;
  std::map<int, int> seen;
  for (int x : v) tiny.push_back(x != 0 && seen[x]++ == 0 ? 0.0015 : 0.0005);
  EXPECT_FALSE(timing::cache_signature(tiny, v));
}

TEST(CacheSignature, NeedsTwoVariantsWithThreeCallsAndAlignedSamples) {
  std::vector<int> v = {1, 0, 1, 0, 1, 0};
  std::vector<double> ms = {1.0, 0.01, 0.01, 0.01, 0.01, 0.01};
  EXPECT_FALSE(timing::cache_signature(ms, v));  // one variant only
  std::vector<int> v2 = {1, 2, 1, 2};
  EXPECT_FALSE(timing::cache_signature({1.0, 1.0, 0.01, 0.01}, v2));  // two calls each
  EXPECT_FALSE(timing::cache_signature({1.0}, {1, 2}));               // not aligned
  EXPECT_FALSE(timing::cache_signature({}, {}));
}

TEST(Status, ImpossibleSpeedHasAName) {
  verdict::Status s;
  ASSERT_TRUE(verdict::parse_status("impossible_speed", &s));
  EXPECT_EQ(s, verdict::Status::ImpossibleSpeed);
  EXPECT_STREQ(verdict::status_name(s), "impossible_speed");
}

}  // namespace
}  // namespace kbx
