// Resolution of external correlation ids across CUPTI buffers.
#include "collector.h"

#include <gtest/gtest.h>

#include "fixtures.h"

namespace kbx::probe {
namespace {

Record launched(std::uint32_t correlation_id, Kind kind = Kind::Kernel) {
  Record r = test::activity(10, 20, 0, kind);
  r.correlation_id = correlation_id;
  return r;
}

TEST(ProbeCollector, ResolvesWhenTheMappingArrivesLater) {
  Collector c;
  c.add_activity(launched(5));
  c.add_external(5, 77);  // from a buffer delivered after the kernel's
  const auto out = c.take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].external_id, 77u);
  EXPECT_EQ(c.pending(), 0u);
}

TEST(ProbeCollector, UnknownCorrelationStaysUnattributed) {
  Collector c;
  c.add_external(5, 77);
  c.add_activity(launched(6));
  EXPECT_EQ(c.take()[0].external_id, 0u);
}

TEST(ProbeCollector, MemcpyFallsBackToTheRuntimeCorrelationId) {
  Collector c;
  c.add_external(31, 9);
  c.add_activity(launched(30, Kind::Memcpy), 31);
  EXPECT_EQ(c.take()[0].external_id, 9u);
}

TEST(ProbeCollector, MarkersPassThroughInOrder) {
  Collector c;
  Record push = test::activity(1, 1, 3, Kind::Push);
  c.add_marker(push);
  c.add_activity(launched(8));
  Record flush = test::activity(2, 2, 0, Kind::Flush);
  flush.detail = 1;
  c.add_marker(flush);
  c.add_external(8, 3);
  const auto out = c.take();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].kind, Kind::Push);
  EXPECT_EQ(out[0].external_id, 3u);
  EXPECT_EQ(out[1].external_id, 3u);
  EXPECT_EQ(out[2].kind, Kind::Flush);
  EXPECT_EQ(out[2].detail, 1u);
}

// A graph launch gives all its kernels one correlation id, possibly over several flushes.
TEST(ProbeCollector, MappingOutlivesATake) {
  Collector c;
  c.add_external(40, 2);
  c.add_activity(launched(40));
  EXPECT_EQ(c.take()[0].external_id, 2u);
  c.add_activity(launched(40));
  EXPECT_EQ(c.take()[0].external_id, 2u);
  EXPECT_EQ(c.mapped(), 1u);
}

TEST(ProbeCollector, OldestMappingsAreEvicted) {
  Collector c(2);
  c.add_external(1, 10);
  c.add_external(1, 11);  // reassigned, not a second entry
  c.add_external(2, 20);
  EXPECT_EQ(c.mapped(), 2u);
  c.add_external(3, 30);
  EXPECT_EQ(c.mapped(), 2u);
  c.add_activity(launched(1));
  c.add_activity(launched(2));
  c.add_activity(launched(3));
  const auto out = c.take();
  EXPECT_EQ(out[0].external_id, 0u);
  EXPECT_EQ(out[1].external_id, 20u);
  EXPECT_EQ(out[2].external_id, 30u);
}

TEST(ProbeCollector, ReassignedIdKeepsItsNewValue) {
  Collector c(2);
  c.add_external(1, 10);
  c.add_external(1, 11);
  c.add_activity(launched(1));
  EXPECT_EQ(c.take()[0].external_id, 11u);
}

}  // namespace
}  // namespace kbx::probe
