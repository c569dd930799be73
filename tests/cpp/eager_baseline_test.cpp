#include <gtest/gtest.h>

#include "sched/baselines.h"
#include "test_util.h"
#include "timing/case_timing.h"

namespace kbx {
namespace {

using nlohmann::json;

suite::Task task_named(const std::string& hash) {
  suite::Task t;
  t.category = "Math";
  t.name = "add";
  t.hash = hash;
  return t;
}

/// A reference's events: an edge case and two full ones, timed or not.
std::map<std::string, sched::ReferenceCases> refs_of(bool timed) {
  sched::ReferenceCases rc;
  rc.cases.push_back({{"case", "edge_a"}, {"tier", "edge"}});
  for (const char* name : {"perf_a", "perf_b"}) {
    json ev = {{"case", name}, {"tier", "full"}};
    if (timed) ev["eager_ms"] = {1.0, 2.0, 3.0}, ev["eager_probe_ms"] = {0.9, 1.9};
    rc.cases.push_back(ev);
  }
  return {{"Math/add|ref", rc}};
}

/// A database, a task and its reference job at seed 7.
class EagerBaselines : public ::testing::Test {
 protected:
  EagerBaselines() : db_(dir_.path() / "k.db"), task_(task_named("h1")) {
    job_.task = &task_;
    job_.seed = 7;
  }
  test::TempDir dir_;
  store::Store db_;
  suite::Task task_;
  sched::ReferenceJob job_;
};

// The room gate's guess of a task's files: remembered per machine, device and task version.
TEST_F(EagerBaselines, AReferencesFootprintIsRememberedPerMachineDeviceAndTaskVersion) {
  EXPECT_EQ(sched::remembered_footprint(db_, "fp", task_, "cuda"), 0u);
  sched::remember_footprint(db_, "fp", task_, "cuda", 5'000'000'123ULL);
  EXPECT_EQ(sched::remembered_footprint(db_, "fp", task_, "cuda"), 5'000'000'123ULL);
  EXPECT_EQ(sched::remembered_footprint(db_, "fp", task_, "cpu"), 0u);
  EXPECT_EQ(sched::remembered_footprint(db_, "other-machine", task_, "cuda"), 0u);
  const suite::Task edited = task_named("h2");
  EXPECT_EQ(sched::remembered_footprint(db_, "fp", edited, "cuda"), 0u);
  sched::remember_footprint(db_, "fp", task_, "cuda", 7);  // measured again: replaced
  EXPECT_EQ(sched::remembered_footprint(db_, "fp", task_, "cuda"), 7u);
}

TEST_F(EagerBaselines, ATimedReferenceIsCachedAndAnUntimedOneGetsTheSamples) {
  auto timed = refs_of(true);
  sched::use_eager_baselines(db_, "fp", "w1", {job_}, {}, timed);
  const auto cached = sched::cached_eager(db_, "fp", task_, 7, "w1");
  ASSERT_EQ(cached.events.size(), 2u);
  EXPECT_EQ(cached.events.at("perf_b"), (std::vector<double>{1.0, 2.0, 3.0}));
  EXPECT_EQ(cached.probe.at("perf_a"), (std::vector<double>{0.9, 1.9}));

  job_.time_eager = false;
  auto untimed = refs_of(false);
  sched::use_eager_baselines(db_, "fp", "w1", {job_}, {{"Math/add", cached}}, untimed);
  const auto& cases = untimed.at("Math/add|ref").cases;
  EXPECT_FALSE(cases[0].contains("eager_ms"));  // an edge case is never timed
  for (size_t k = 1; k < 3; ++k) {
    EXPECT_EQ(cases[k]["eager_ms"], json({1.0, 2.0, 3.0}));
    EXPECT_EQ(cases[k]["eager_probe_ms"], json({0.9, 1.9}));
    EXPECT_TRUE(cases[k].value("eager_cached", false));
  }
}

// A cached baseline keeps that its call waited on the host: the speedups against it are marked
// as following the host (report::follows_host) in a warm run as in the cold one.
TEST_F(EagerBaselines, ACaseWhoseEagerCallWaitedOnTheHostKeepsSoInTheCache) {
  auto timed = refs_of(true);
  timed.at("Math/add|ref").cases[1]["phases"] = {{"eager", 0.5}, {"eager_host_loop_ms", 0.41}};
  sched::use_eager_baselines(db_, "fp", "w1", {job_}, {}, timed);
  const auto cached = sched::cached_eager(db_, "fp", task_, 7, "w1");
  EXPECT_EQ(cached.host_waits, (store::CaseSamples{{"perf_a", {0.41}}}));

  job_.time_eager = false;
  auto untimed = refs_of(false);
  sched::use_eager_baselines(db_, "fp", "w1", {job_}, {{"Math/add", cached}}, untimed);
  const auto& cases = untimed.at("Math/add|ref").cases;
  EXPECT_EQ(cases[1]["phases"]["eager_host_loop_ms"], 0.41);
  EXPECT_FALSE(cases[2].contains("phases"));  // perf_b's eager call only queued GPU work
  store::CaseResult cr;
  timing::fill_timing(cr, cases[1], nullptr);
  EXPECT_EQ(cr.timing_flags, "eager_waits_on_host");
}

// So does one whose eager calls waited for their own launches (timing::mark_eager_launch_gaps).
TEST_F(EagerBaselines, ACaseWhoseEagerCallsHadLaunchGapsKeepsSoInTheCache) {
  auto timed = refs_of(true);
  timed.at("Math/add|ref").cases[2]["phases"] = {{"eager", 0.5}, {"eager_launch_gaps", 1.0}};
  sched::use_eager_baselines(db_, "fp", "w1", {job_}, {}, timed);
  const auto cached = sched::cached_eager(db_, "fp", task_, 7, "w1");
  EXPECT_EQ(cached.launch_gaps, (store::CaseSamples{{"perf_b", {1.0}}}));
  EXPECT_TRUE(cached.host_waits.empty());

  job_.time_eager = false;
  auto untimed = refs_of(false);
  sched::use_eager_baselines(db_, "fp", "w1", {job_}, {{"Math/add", cached}}, untimed);
  const auto& cases = untimed.at("Math/add|ref").cases;
  EXPECT_FALSE(cases[1].contains("phases"));
  store::CaseResult cr;
  timing::fill_timing(cr, cases[2], nullptr);
  EXPECT_EQ(cr.timing_flags, "eager_launch_gaps");
}

TEST_F(EagerBaselines, NothingIsCachedForAnotherSeedWorkerMachineOrEditedTask) {
  auto timed = refs_of(true);
  sched::use_eager_baselines(db_, "fp", "w1", {job_}, {}, timed);
  EXPECT_FALSE(sched::cached_eager(db_, "fp", task_, 7, "w1").events.empty());
  EXPECT_TRUE(sched::cached_eager(db_, "fp", task_, 8, "w1").events.empty());
  EXPECT_TRUE(sched::cached_eager(db_, "fp", task_, 7, "w2").events.empty());
  EXPECT_TRUE(sched::cached_eager(db_, "fp2", task_, 7, "w1").events.empty());
  EXPECT_TRUE(sched::cached_eager(db_, "fp", task_named("h2"), 7, "w1").events.empty());
}

TEST_F(EagerBaselines, TimingsWithOutputsKeptAreCachedApart) {
  const std::string hash = "0123456789abcdef0123456789abcdef";
  EXPECT_EQ(sched::eager_worker_key(hash, 0), hash);
  EXPECT_EQ(sched::eager_worker_key(hash, 0, true), hash + "/eager_redraw");
  EXPECT_EQ(sched::eager_worker_key(hash, 2, true), hash + "/keep_outputs=2/eager_redraw");
  const std::string kept = sched::eager_worker_key(hash, 2);
  EXPECT_EQ(sched::eager_kinds(7, hash).first, "eager/seed=7/worker=0123456789abcdef");
  EXPECT_EQ(sched::eager_kinds(7, kept).first,
            "eager/seed=7/worker=0123456789abcdef/keep_outputs=2");
  EXPECT_EQ(sched::eager_kinds(7, kept).second,
            "eager_probe/seed=7/worker=0123456789abcdef/keep_outputs=2");
  auto timed = refs_of(true);
  sched::use_eager_baselines(db_, "fp", hash, {job_}, {}, timed);
  EXPECT_FALSE(sched::cached_eager(db_, "fp", task_, 7, hash).events.empty());
  EXPECT_TRUE(sched::cached_eager(db_, "fp", task_, 7, kept).events.empty())
      << "timed with each output freed before the next call: not the kept-outputs timing";
}

TEST_F(EagerBaselines, AReferenceWithAnUntimedFullCaseIsNotCached) {
  auto refs = refs_of(true);
  refs.at("Math/add|ref").cases[2].erase("eager_ms");  // its timing failed
  sched::use_eager_baselines(db_, "fp", "w1", {job_}, {}, refs);
  EXPECT_TRUE(sched::cached_eager(db_, "fp", task_, 7, "w1").events.empty());
}

TEST_F(EagerBaselines, CachedSecondsAreTheSumOfTheFullCasesSamples) {
  auto timed = refs_of(true);
  sched::use_eager_baselines(db_, "fp", "w1", {job_}, {}, timed);
  EXPECT_DOUBLE_EQ(sched::cached_eager_seconds(sched::cached_eager(db_, "fp", task_, 7, "w1")),
                   12.0 / 1000.0);  // two cases of 1 + 2 + 3 ms
  EXPECT_EQ(sched::cached_eager_seconds(sched::cached_eager(db_, "fp", task_, 8, "w1")), 0.0);
}

TEST(HeavyTasksFirst, TheFirstStaysThenTheHeavyHeaviestFirstThenTheRestInOrder) {
  const std::vector<std::string> order{"A/first",    "B/light",           "C/heavy", "D/light",
                                       "E/heaviest", "F/first_heavy_tie", "G/light"};
  const std::map<std::string, double> weight{{"A/first", 30.0},
                                             {"B/light", 0.2},
                                             {"C/heavy", 3.0},
                                             {"E/heaviest", 12.0},
                                             {"F/first_heavy_tie", 3.0}};
  EXPECT_EQ(sched::heavy_tasks_first(order, weight, 1.0),
            (std::vector<std::string>{"A/first", "E/heaviest", "C/heavy", "F/first_heavy_tie",
                                      "B/light", "D/light", "G/light"}));
  // nothing cached: the order as it was
  EXPECT_EQ(sched::heavy_tasks_first(order, {}, 1.0), order);
}

}  // namespace
}  // namespace kbx
