// The jobs of a run handed to the lanes as their references become ready (issue 14's pipeline).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "sched/jobs.h"
#include "verdict/job_status.h"

namespace kbx::sched {
namespace {

using namespace std::chrono_literals;

store::Candidate candidate(const std::string& task) {
  store::Candidate c;
  c.task = task;
  return c;
}

TEST(JobFeed, HandsOutJobsInOrderWithTheirTasksReferences) {
  JobFeed feed;
  const auto a = candidate("A/x"), b = candidate("B/y");
  ReferenceCases ra;
  ra.dir = "ref/A/x";
  feed.add("A/x", ra, {&a});
  ReferenceCases rb;
  rb.dir = "ref/B/y";
  feed.add("B/y", rb, {&b});
  feed.close();
  auto first = feed.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->candidate, &a);
  EXPECT_EQ(first->refs->dir, "ref/A/x");
  auto second = feed.next();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->refs->dir, "ref/B/y");
  EXPECT_FALSE(feed.next());
}

TEST(JobFeed, NextWaitsForTheReferencesOfLaterTasks) {
  JobFeed feed;
  const auto a = candidate("A/x");
  auto waiting = std::async(std::launch::async, [&] { return feed.next(); });
  EXPECT_EQ(waiting.wait_for(50ms), std::future_status::timeout);
  feed.add("A/x", {}, {&a});
  ASSERT_EQ(waiting.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(waiting.get()->candidate, &a);
  auto after_close = std::async(std::launch::async, [&] { return feed.next(); });
  feed.close();
  ASSERT_EQ(after_close.wait_for(2s), std::future_status::ready);
  EXPECT_FALSE(after_close.get());
}

TEST(JobFeed, ATasksFilesGoWhenItsLastJobEnds) {
  std::vector<std::string> done, folders;
  JobFeed feed([&](const std::string& task, const ReferenceCases& refs) {
    done.push_back(task);
    folders.push_back(refs.dir.string() + "|" + refs.in_dir.string());
  });
  const auto a1 = candidate("A/x"), a2 = candidate("A/x");
  ReferenceCases ra, rb;
  ra.dir = "ref/A/x", ra.in_dir = "inputs/A/x";
  rb.dir = "ref/B/y", rb.in_dir = "inputs/B/y";
  feed.add("A/x", ra, {&a1, &a2});
  feed.add("B/y", rb, {});  // no jobs: done at once
  EXPECT_EQ(done, std::vector<std::string>{"B/y"});
  feed.job_ended("A/x");
  EXPECT_EQ(done.size(), 1u);
  feed.job_ended("A/x");
  EXPECT_EQ(done, (std::vector<std::string>{"B/y", "A/x"}));
  // the folders to remove are the task's own, as its references named them
  EXPECT_EQ(folders, (std::vector<std::string>{"ref/B/y|inputs/B/y", "ref/A/x|inputs/A/x"}));
}

TEST(JobFeed, TheReferenceWorkerWaitsWhileTooManyTasksAreLive) {
  JobFeed feed;
  const auto a = candidate("A/x"), b = candidate("B/y"), c = candidate("C/z");
  feed.add("A/x", {}, {&a});
  feed.add("B/y", {}, {&b});
  feed.add("C/z", {}, {&c});
  auto ahead = std::async(std::launch::async, [&] { feed.wait_until_live_at_most(2); });
  EXPECT_EQ(ahead.wait_for(50ms), std::future_status::timeout);
  feed.job_ended("A/x");
  EXPECT_EQ(ahead.wait_for(2s), std::future_status::ready);
}

TEST(JobFeed, AParkedJobDoesNotHoldTheReferenceWorkerBack) {
  // A job that runs again after the lanes keeps its task's files, but waiting for it to end
  // before computing more references would wait forever: the lanes end only when the feed closes.
  std::vector<std::string> done;
  JobFeed feed([&](const std::string& task, const ReferenceCases&) { done.push_back(task); });
  const auto a = candidate("A/x");
  feed.add("A/x", {}, {&a});
  feed.park({&a, nullptr});
  auto ahead = std::async(std::launch::async, [&] { feed.wait_until_live_at_most(0); });
  EXPECT_EQ(ahead.wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(done.empty());  // its files stay for the retry
  feed.job_ended("A/x");
  EXPECT_EQ(done, std::vector<std::string>{"A/x"});
}

TEST(JobFeed, ParkedJobsRunAloneOneAtATimeOnceTheirTasksReachTheBound) {
  // Parked jobs keep their tasks' files: beyond the bound they run alone before any other job
  // (session 31: a run whose every job was parked filled /dev/shm with their files).
  JobFeed feed;
  feed.set_parked_bound(2);
  const auto a = candidate("A/x"), b = candidate("B/y"), c = candidate("C/z");
  feed.add("A/x", {}, {&a});
  feed.add("B/y", {}, {&b});
  feed.add("C/z", {}, {&c});
  auto first = feed.next(), second = feed.next();
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(first->alone);
  feed.park(*first);
  feed.park(*second);
  auto alone = feed.next();  // C is ready, but the parked go first
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->candidate, &a);
  EXPECT_TRUE(alone->alone);
  // the reference worker waits too: nothing else may run beside an alone job
  auto refs = std::async(std::launch::async, [&] { feed.wait_until_live_at_most(5); });
  auto after = std::async(std::launch::async, [&] { return feed.next(); });
  EXPECT_EQ(after.wait_for(100ms), std::future_status::timeout);
  EXPECT_EQ(refs.wait_for(10ms), std::future_status::timeout);
  feed.job_ended("A/x");
  ASSERT_EQ(after.wait_for(2s), std::future_status::ready);
  auto b_alone = after.get();
  EXPECT_EQ(b_alone->candidate, &b);
  EXPECT_TRUE(b_alone->alone);
  EXPECT_EQ(refs.wait_for(100ms), std::future_status::timeout);
  feed.job_ended("B/y");
  EXPECT_EQ(refs.wait_for(2s), std::future_status::ready);
  auto third = feed.next();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->candidate, &c);
  EXPECT_FALSE(third->alone);
}

TEST(JobFeed, AnAloneJobWaitsForTheRunningJobsAndReferenceChunks) {
  JobFeed feed;
  feed.set_parked_bound(1);
  const auto a = candidate("A/x"), b = candidate("B/y");
  feed.add("A/x", {}, {&a});
  feed.add("B/y", {}, {&b});
  auto chunk = std::make_unique<ReferenceTurn>(feed);  // a chunk being computed
  auto first = feed.next();
  ASSERT_TRUE(feed.next());  // B runs
  feed.park(*first);
  auto alone = std::async(std::launch::async, [&] { return feed.next(); });
  EXPECT_EQ(alone.wait_for(100ms), std::future_status::timeout);  // B still runs
  // a new chunk waits for the parked job to have run alone
  auto next_chunk = std::async(std::launch::async, [&] { ReferenceTurn turn(feed); });
  feed.job_ended("B/y");
  EXPECT_EQ(alone.wait_for(100ms), std::future_status::timeout);  // the chunk still runs
  chunk.reset();
  ASSERT_EQ(alone.wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(alone.get()->alone);
  EXPECT_EQ(next_chunk.wait_for(100ms), std::future_status::timeout);
  feed.job_ended("A/x");
  EXPECT_EQ(next_chunk.wait_for(2s), std::future_status::ready);
}

TEST(JobFeed, AClosedFeedHandsItsParkedJobsBackAloneThenEnds) {
  std::vector<std::string> done;
  JobFeed feed([&](const std::string& task, const ReferenceCases&) { done.push_back(task); });
  const auto a = candidate("A/x"), b = candidate("B/y");
  feed.add("A/x", {}, {&a});
  feed.add("B/y", {}, {&b});
  auto first = feed.next();
  feed.park(*first);  // no bound: it waits for the others
  auto second = feed.next();
  EXPECT_EQ(second->candidate, &b);
  EXPECT_FALSE(second->alone);
  feed.close();
  auto alone = std::async(std::launch::async, [&] { return feed.next(); });
  EXPECT_EQ(alone.wait_for(100ms), std::future_status::timeout);  // B still runs
  feed.job_ended("B/y");
  ASSERT_EQ(alone.wait_for(2s), std::future_status::ready);
  auto again = alone.get();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->candidate, &a);
  EXPECT_TRUE(again->alone);
  feed.job_ended("A/x");
  EXPECT_FALSE(feed.next());
  EXPECT_EQ(done, (std::vector<std::string>{"B/y", "A/x"}));
}

TEST(JobFeed, TheRoomGateCanAskParkedJobsToRunAloneAndFreeTheirFiles) {
  JobFeed feed;  // no bound
  const auto a = candidate("A/x"), b = candidate("B/y");
  feed.add("A/x", {}, {&a});
  feed.add("B/y", {}, {&b});
  feed.park(*feed.next());
  EXPECT_TRUE(feed.parked_hold_files());
  auto alone = feed.next();
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->candidate, &a);
  EXPECT_TRUE(alone->alone);
  EXPECT_TRUE(feed.parked_hold_files());  // until it ends
  feed.job_ended("A/x");
  EXPECT_FALSE(feed.parked_hold_files());
  auto next = feed.next();
  EXPECT_EQ(next->candidate, &b);
  EXPECT_FALSE(next->alone);
}

TEST(LaneGate, AtMostItsLanesAreHeldAndAReleasedHoldFreesItsLaneOnce) {
  sched::LaneGate gate(2);
  auto first = std::make_unique<sched::LaneGate::Hold>(gate);
  sched::LaneGate::Hold second(gate);
  EXPECT_EQ(gate.free_lanes(), 0);
  // A third job waits for a lane ...
  auto third = std::async(std::launch::async, [&] { sched::LaneGate::Hold h(gate); });
  EXPECT_EQ(third.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  // ... until one job hands the GPU's slot back (its files and comparisons go on beside).
  first->release();
  EXPECT_EQ(third.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  third.get();
  EXPECT_EQ(gate.free_lanes(), 1);
  first->release();  // again: nothing more
  first.reset();     // and at its end: nothing more
  EXPECT_EQ(gate.free_lanes(), 1);
}

}  // namespace
}  // namespace kbx::sched

namespace kbx {
namespace {

store::Result result_with(const std::string& status, const std::string& flags = "",
                          const std::string& detail = "") {
  store::Result r;
  r.status = status;
  r.detail = detail;
  store::CaseResult timed;
  timed.name = "perf";
  timed.timing_flags = flags;
  r.cases = {store::CaseResult{}, timed};
  return r;
}

}  // namespace

TEST(NotAVerdictBesideOthers, ATimedCaseThatMetAnotherProcesssGpuWorkRunsAgainAlone) {
  EXPECT_EQ(sched::not_a_verdict_beside_others(result_with("passed"), false), "");
  EXPECT_EQ(sched::not_a_verdict_beside_others(result_with("passed", "same_values"), false), "");
  EXPECT_EQ(
      sched::not_a_verdict_beside_others(result_with("passed", "host_bound,contended"), false),
      "contended_beside");
  EXPECT_EQ(sched::not_a_verdict_beside_others(result_with("passed", "uncontended"), false), "")
      << "the flag by its whole name";
  EXPECT_TRUE(sched::timed_contended(result_with("passed", "contended")));
  EXPECT_FALSE(sched::timed_contended(result_with("passed", "contended_x")));
}

TEST(NotAVerdictBesideOthers, TheOtherReasonsComeFirst) {
  EXPECT_EQ(sched::not_a_verdict_beside_others(result_with("passed", "contended"), true),
            "warm_parent_died");
  EXPECT_EQ(sched::not_a_verdict_beside_others(result_with("harness_error"), false), "retry");
  EXPECT_EQ(sched::not_a_verdict_beside_others(
                result_with("harness_error", "",
                            std::string("case train_p01: ") + verdict::kJudgeOutOfGpuMemory +
                                " (kbx's own work): CUDA out of memory"),
                false),
            "oom_beside")
      << "the random cases' judge out of the shared GPU memory: said so, not 'kbx failed'";
  EXPECT_EQ(sched::not_a_verdict_beside_others(result_with("oom"), false), "oom_beside");
  EXPECT_EQ(
      sched::not_a_verdict_beside_others(result_with("oom", "", verdict::kOwnMemoryLimit), false),
      "")
      << "the job's own memory limit: alone would change nothing";
  EXPECT_EQ(sched::not_a_verdict_beside_others(result_with("numerical_mismatch"), false), "");
}

TEST(NotAVerdictBesideOthers, AGpuLibrarysFailedAllocationOrCudnnsInternalErrorRunsAgainAlone) {
  // session 35 on an H100 with 80 GB in use: honest references failed so beside other jobs
  EXPECT_EQ(sched::not_a_verdict_beside_others(
                result_with("cuda_error", "",
                            "case v: RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when "
                            "calling `cublasCreate(handle)`"),
                false),
            "oom_beside");
  EXPECT_EQ(sched::not_a_verdict_beside_others(
                result_with("runtime_error", "",
                            "case c: RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"),
                false),
            "oom_beside");
  EXPECT_EQ(
      sched::not_a_verdict_beside_others(
          result_with("cuda_error", "", "case v: CUDA error: an illegal memory access"), false),
      "")
      << "a CUDA error of the candidate's own stands";
  EXPECT_EQ(sched::not_a_verdict_beside_others(
                result_with("numerical_mismatch", "", "CUBLAS_STATUS_ALLOC_FAILED"), false),
            "")
      << "only an error's own words count";
}

TEST(NotAVerdictBesideOthers, ATimingInAProcessStarvedOfGpuMemoryRunsAgainAlone) {
  // a neighbour's memory may have left cuDNN without workspace: a slower plan, kept
  EXPECT_TRUE(sched::timed_starved(result_with("passed", "starved")));
  EXPECT_FALSE(sched::timed_starved(result_with("passed", "starved_x")));
  EXPECT_FALSE(sched::timed_starved(result_with("passed")));
  EXPECT_EQ(sched::not_a_verdict_beside_others(result_with("passed", "starved"), false),
            "starved_beside");
  EXPECT_EQ(sched::not_a_verdict_beside_others(result_with("passed", "contended,starved"), false),
            "contended_beside")
      << "one reason is enough: the first one found";
  EXPECT_EQ(sched::not_a_verdict_beside_others(result_with("passed", "starved"), true),
            "warm_parent_died");
}

TEST(NotAVerdictBesideOthers, TheRunSaysHowManyJobsRanAgainAloneAndWhy) {
  EXPECT_EQ(sched::again_alone_summary({}), "");
  EXPECT_EQ(sched::again_alone_summary({{"verdict", 12}, {"interrupted", 1}}), "");
  EXPECT_EQ(sched::again_alone_summary({{"verdict", 12}, {"contended_beside", 1}}),
            "1 job ran again alone (contended_beside 1)");
  EXPECT_EQ(sched::again_alone_summary({{"oom_beside", 1}, {"contended_beside", 2}}),
            "3 jobs ran again alone (contended_beside 2, oom_beside 1)");
  EXPECT_EQ(sched::again_alone_summary({{"starved_beside", 2}, {"verdict", 4}}),
            "2 jobs ran again alone (starved_beside 2)");
}

}  // namespace kbx
