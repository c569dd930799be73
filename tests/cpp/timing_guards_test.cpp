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

TEST(Status, ImpossibleSpeedHasAName) {
  verdict::Status s;
  ASSERT_TRUE(verdict::parse_status("impossible_speed", &s));
  EXPECT_EQ(s, verdict::Status::ImpossibleSpeed);
  EXPECT_STREQ(verdict::status_name(s), "impossible_speed");
}

}  // namespace
}  // namespace kbx
