#include "store/baselines.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace kbx {
namespace {

TEST(Baselines, CachedPerFingerprintTaskHashAndKind) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  EXPECT_TRUE(store::cached_baseline(db, "fp1", "Math/add", "h1", "compile").empty());
  store::save_baseline(db, "fp1", "Math/add", "h1", "compile",
                       {{"perf_a", {1.0, 2.0}}, {"perf_b", {3.0}}});
  auto got = store::cached_baseline(db, "fp1", "Math/add", "h1", "compile");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got["perf_a"], (std::vector<double>{1.0, 2.0}));
  // another machine, an edited task or another baseline kind: nothing cached
  EXPECT_TRUE(store::cached_baseline(db, "fp2", "Math/add", "h1", "compile").empty());
  EXPECT_TRUE(store::cached_baseline(db, "fp1", "Math/add", "h2", "compile").empty());
  EXPECT_TRUE(store::cached_baseline(db, "fp1", "Math/add", "h1", "other").empty());
  // saving again replaces the samples
  store::save_baseline(db, "fp1", "Math/add", "h1", "compile", {{"perf_a", {9.0}}});
  got = store::cached_baseline(db, "fp1", "Math/add", "h1", "compile");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got["perf_a"], (std::vector<double>{9.0}));
}

}  // namespace
}  // namespace kbx
