// CUPTI activity records -> probe records, on hand-filled CUPTI structs (no GPU needed).
#include "cupti_convert.h"

#include <gtest/gtest.h>

#include <string>

namespace kbx::probe {
namespace {

TEST(ProbeCuptiConvert, Kernel) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1'000;
  k.end = 3'500;
  k.deviceId = 2;
  k.contextId = 1;
  k.streamId = 13;
  k.correlationId = 4711;
  k.gridX = 64;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 128;
  k.blockY = 1;
  k.blockZ = 1;
  k.name = "add_kernel";
  const Record r = from_cupti(k);
  EXPECT_EQ(r.kind, Kind::Kernel);
  EXPECT_EQ(r.start_ns, 1'000u);
  EXPECT_EQ(r.end_ns, 3'500u);
  EXPECT_EQ(r.device_id, 2u);
  EXPECT_EQ(r.context_id, 1u);
  EXPECT_EQ(r.stream_id, 13u);
  EXPECT_EQ(r.correlation_id, 4711u);
  EXPECT_EQ(r.external_id, 0u);
  EXPECT_EQ(r.grid, (std::array<std::int32_t, 3>{64, 2, 1}));
  EXPECT_EQ(r.block, (std::array<std::int32_t, 3>{128, 1, 1}));
  EXPECT_EQ(r.name_view(), "add_kernel");
  EXPECT_EQ(r.flags, 0u);
}

TEST(ProbeCuptiConvert, KernelFlags) {
  CUpti_ActivityKernel10 k{};
  const std::string lng(250, 'n');
  k.name = lng.c_str();
  k.graphId = 3;
  k.isDeviceLaunched = 1;
  const Record r = from_cupti(k);
  EXPECT_TRUE(r.has(kNameTruncated));
  EXPECT_TRUE(r.has(kNoTimestamp));
  EXPECT_TRUE(r.has(kGraphLaunched));
  EXPECT_TRUE(r.has(kDeviceLaunched));
  EXPECT_FALSE(r.is_timed());
  k.name = nullptr;
  EXPECT_EQ(from_cupti(k).name_view(), "");
}

TEST(ProbeCuptiConvert, Memcpy) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  m.bytes = 1 << 20;
  m.start = 10;
  m.end = 20;
  m.streamId = 7;
  m.correlationId = 99;
  m.runtimeCorrelationId = 98;
  const Record r = from_cupti(m);
  EXPECT_EQ(r.kind, Kind::Memcpy);
  EXPECT_EQ(r.detail, static_cast<std::uint32_t>(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH));
  EXPECT_EQ(r.bytes, 1u << 20);
  EXPECT_EQ(r.correlation_id, 99u);
  EXPECT_EQ(r.duration_ns(), 10u);
}

TEST(ProbeCuptiConvert, Memset) {
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.value = 0xff;
  m.bytes = 4096;
  m.start = 5;
  m.end = 6;
  const Record r = from_cupti(m);
  EXPECT_EQ(r.kind, Kind::Memset);
  EXPECT_EQ(r.detail, 0xffu);
  EXPECT_EQ(r.bytes, 4096u);
}

}  // namespace
}  // namespace kbx::probe
