// The timing of one case of a candidate job (timing/case_timing.h): samples from each clock,
// the cost model's dtype, the probe's faults, the physical floor and one-clock speedups.
#include "timing/case_timing.h"

#include <gtest/gtest.h>

#include "sched/reference.h"

namespace kbx {
namespace {
using nlohmann::json;
using probe::Kind;
using probe::Record;

Record marker(Kind kind, std::uint64_t id, std::uint64_t t) {
  Record r;
  r.kind = kind;
  r.external_id = id;
  r.start_ns = r.end_ns = t;
  return r;
}

Record kernel(const char* name, std::uint64_t id, std::uint64_t start, std::uint64_t end) {
  Record r;
  r.kind = Kind::Kernel;
  r.external_id = id;
  r.start_ns = start;
  r.end_ns = end;
  r.set_name(name);
  return r;
}

/// A valid probe stream of two calls of the candidate's own "add_kernel": spans 10 µs each.
timing::ProbeData own_kernel_probe() {
  timing::ProbeData p;
  p.expected = p.ok = true;
  p.triton_functions = {"add_kernel"};
  p.index.emplace(
      std::vector<Record>{marker(Kind::Push, 1, 1000), kernel("add_kernel", 1, 2000, 12000),
                          marker(Kind::Pop, 1, 3000), marker(Kind::Push, 2, 20000),
                          kernel("add_kernel", 2, 21000, 31000), marker(Kind::Pop, 2, 22000)});
  return p;
}

/// One call whose work is a cuBLAS GEMM behind a token Triton launch.
timing::ProbeData library_probe() {
  timing::ProbeData p;
  p.expected = p.ok = true;
  p.triton_functions = {"tiny_triton_touch"};
  p.index.emplace(
      std::vector<Record>{marker(Kind::Push, 7, 0),
                          kernel("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN", 7, 10, 1010),
                          kernel("tiny_triton_touch", 7, 1020, 1030), marker(Kind::Pop, 7, 5)});
  return p;
}

/// A case the candidate's worker timed by CUDA events at `ms` per call.
store::CaseResult timed_case(const timing::TimedCalls& calls) {
  store::CaseResult cr;
  cr.name = "perf";
  timing::fill_timing(cr, json{{"case", "perf"}, {"eager_ms", {0.02, 0.02, 0.02}}}, &calls);
  return cr;
}

TEST(CaseTiming, ComputeDtypeFromTheCostModelElseTheOutputs) {
  EXPECT_EQ(timing::compute_dtype({{"cost", {{"compute", "torch.bfloat16"}}},
                                   {"outputs", {{{"dtype", "torch.float32"}}}}}),
            "torch.bfloat16");
  EXPECT_EQ(timing::compute_dtype(
                {{"outputs", {{{"dtype", "torch.int64"}}, {{"dtype", "torch.float16"}}}}}),
            "torch.float16");  // the first floating-point output
  EXPECT_EQ(timing::compute_dtype({{"outputs", {{{"kind", "int"}}, {{"dtype", "torch.int8"}}}}}),
            "torch.int8");  // else the first output with a dtype
  EXPECT_EQ(timing::compute_dtype({{"outputs", json::array()}}), "");
}

TEST(CaseTiming, CompileSamplesPreferTheProbe) {
  EXPECT_EQ(timing::compile_samples({{"compile_ms", {2.0}}, {"compile_probe_ms", {1.0}}}),
            (std::vector<double>{1.0}));
  EXPECT_EQ(timing::compile_samples({{"compile_ms", {2.0}}}), (std::vector<double>{2.0}));
  EXPECT_TRUE(timing::compile_samples(json::object()).empty());
}

TEST(CaseTiming, AnUntimedCaseHasItsCostAndEagerOnly) {
  store::CaseResult cr;
  timing::fill_timing(cr,
                      {{"cost", {{"flops", 10.0}, {"bytes", 40.0}}},
                       {"eager_ms", {2.0, 6.0, 4.0}},
                       {"outputs", {{{"dtype", "torch.float32"}}}}},
                      nullptr);
  EXPECT_EQ(cr.flops, 10.0);
  EXPECT_EQ(cr.bytes, 40.0);
  EXPECT_EQ(cr.dtype, "torch.float32");
  EXPECT_EQ(cr.eager_ms, 4.0);
  EXPECT_TRUE(cr.eager_event_samples.empty());
  EXPECT_FALSE(cr.cand_ms);
  EXPECT_EQ(cr.timing_source, "");
}

TEST(CaseTiming, EagerUnderTheProbeKeepsItsEventsAsTheCrossCheck) {
  store::CaseResult cr;
  timing::fill_timing(cr, {{"eager_ms", {2.0, 2.0}}, {"eager_probe_ms", {1.0, 3.0, 1.5}}}, nullptr);
  EXPECT_EQ(cr.eager_samples, (std::vector<double>{1.0, 3.0, 1.5}));
  EXPECT_EQ(cr.eager_ms, 1.5);
  EXPECT_EQ(cr.eager_event_samples, (std::vector<double>{2.0, 2.0}));
  EXPECT_EQ(cr.eager_event_ms, 2.0);
}

TEST(CaseTiming, ATimedCaseTakesTheEventsAndHostTimes) {
  const auto cr = timed_case({{3.0, 1.0, 2.0}, {0.5, 0.5, 0.5}, {}});
  EXPECT_EQ(cr.cand_ms, 2.0);
  EXPECT_EQ(cr.timing_source, "events");
  EXPECT_EQ(cr.cand_host_samples, (std::vector<double>{0.5, 0.5, 0.5}));
}

TEST(CaseTiming, ACaseTimedBesideAnotherProcesssGpuWorkIsFlaggedContended) {
  EXPECT_EQ(timed_case(timing::TimedCalls{{1.0}, {0.1}, {1}}).timing_flags, "");
  timing::TimedCalls calls{{1.0}, {0.1}, {1}};
  calls.contended = true;
  EXPECT_EQ(timed_case(calls).timing_flags, "contended");
}

TEST(CaseTiming, ACaseTimedInAProcessThatRanOutOfGpuMemoryIsFlaggedStarved) {
  // session 41 on an H100: cuDNN's convolution kept a plan with less workspace, 1.3-9.5x slower
  timing::TimedCalls calls{{1.0}, {0.1}, {1}};
  EXPECT_EQ(timed_case(calls).timing_flags, "");
  calls.starved = true;
  EXPECT_EQ(timed_case(calls).timing_flags, "starved");
  calls.contended = true;
  EXPECT_EQ(timed_case(calls).timing_flags, "contended,starved");
}

TEST(CaseTiming, ACallThatWaitsOnTheHostIsFlaggedForTheAnalysis) {
  timing::TimedCalls calls{{1.0}, {0.1}, {1}};
  calls.waits_on_host = true;
  EXPECT_EQ(timed_case(calls).timing_flags, "waits_on_host");
  calls.contended = true;
  EXPECT_EQ(timed_case(calls).timing_flags, "contended,waits_on_host");
  store::CaseResult eager_side;
  timing::fill_timing(eager_side, {{"eager_ms", {2.0}}, {"phases", {{"eager_batches", 0.2}}}},
                      nullptr);
  EXPECT_EQ(eager_side.timing_flags, "");
  timing::fill_timing(eager_side, {{"eager_ms", {2.0}}, {"phases", {{"eager_host_loop_ms", 0.4}}}},
                      nullptr);
  EXPECT_EQ(eager_side.timing_flags, "eager_waits_on_host");
}

TEST(CaseTiming, ASilentProbeLeavesTheEventsAndSaysSo) {
  const timing::TimedCalls calls{{1.0}, {0.1}, {1}};
  auto cr = timed_case(calls);
  timing::ProbeData p;
  p.expected = true;
  p.harness_problem = true;
  p.problem = "the probe wrote nothing";
  EXPECT_FALSE(timing::fill_probe_timing(cr, p, calls, "triton"));
  EXPECT_EQ(cr.timing_flags, "probe_silent");
  EXPECT_EQ(cr.timing_source, "events");
  EXPECT_EQ(cr.cand_ms, 1.0);
}

TEST(CaseTiming, AnInvalidStreamOrUnmarkedCallsAreATimingMismatch) {
  const timing::TimedCalls calls{{1.0}, {0.1}, {1}};
  auto cr = timed_case(calls);
  timing::ProbeData p;
  p.expected = true;
  p.problem = "the probe's stream is invalid: truncated";
  auto bad = timing::fill_probe_timing(cr, p, calls, "triton");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->fault, timing::Fault::TimingMismatch);
  EXPECT_EQ(bad->detail, p.problem);

  const timing::TimedCalls unmarked{{1.0}, {0.1}, {}};
  bad = timing::fill_probe_timing(cr, own_kernel_probe(), unmarked, "triton");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->fault, timing::Fault::TimingMismatch);
  EXPECT_EQ(bad->detail, "the timed calls were not marked for the probe");
}

TEST(CaseTiming, TheProbesSpansReplaceTheEvents) {
  const timing::TimedCalls calls{{0.011, 0.012}, {0.001, 0.001}, {1, 2}};
  auto cr = timed_case(calls);
  EXPECT_FALSE(timing::fill_probe_timing(cr, own_kernel_probe(), calls, "triton"));
  EXPECT_EQ(cr.timing_source, "probe");
  ASSERT_EQ(cr.cand_samples.size(), 2u);
  EXPECT_DOUBLE_EQ(cr.cand_samples[0], 0.010);  // 2000 .. 12000 ns
  EXPECT_DOUBLE_EQ(cr.cand_samples[1], 0.010);
  EXPECT_EQ(cr.cand_event_samples, (std::vector<double>{0.011, 0.012}));
  ASSERT_TRUE(cr.kernel_share);
  EXPECT_DOUBLE_EQ(*cr.kernel_share, 1.0);
  EXPECT_EQ(cr.timing_flags, "");
}

TEST(CaseTiming, LibraryWorkIsAFallbackOnTrackTritonOnly) {
  const timing::TimedCalls calls{{0.0011}, {0.0001}, {7}};
  auto cr = timed_case(calls);
  auto bad = timing::fill_probe_timing(cr, library_probe(), calls, "triton");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->fault, timing::Fault::Fallback);
  EXPECT_EQ(cr.timing_flags, "fallback");
  cr = timed_case(calls);
  EXPECT_FALSE(timing::fill_probe_timing(cr, library_probe(), calls, "any"));
}

TEST(CaseTiming, EventsMuchShorterThanTheProbeDisagree) {
  const timing::TimedCalls calls{{0.002, 0.002}, {0.001, 0.001}, {1, 2}};  // probe: 0.010 ms
  auto cr = timed_case(calls);
  auto bad = timing::fill_probe_timing(cr, own_kernel_probe(), calls, "triton");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->fault, timing::Fault::TimingMismatch);
  EXPECT_EQ(cr.timing_flags, "events_disagree");
}

TEST(CaseTiming, HostBoundIsAFlagNotAFault) {
  const timing::TimedCalls calls{{0.011, 0.012}, {0.5, 0.5}, {1, 2}};
  auto cr = timed_case(calls);
  EXPECT_FALSE(timing::fill_probe_timing(cr, own_kernel_probe(), calls, "triton"));
  EXPECT_EQ(cr.timing_flags, "host_bound");
}

/// Two calls of two kernels each, 2 µs of work in a 10 µs span: the GPU waited for the second
/// launch inside each call.
timing::ProbeData gapped_probe() {
  timing::ProbeData p;
  p.expected = p.ok = true;
  p.triton_functions = {"add_kernel"};
  p.index.emplace(
      std::vector<Record>{marker(Kind::Push, 1, 1000), kernel("add_kernel", 1, 2000, 3000),
                          kernel("add_kernel", 1, 11000, 12000), marker(Kind::Pop, 1, 3000),
                          marker(Kind::Push, 2, 20000), kernel("add_kernel", 2, 21000, 22000),
                          kernel("add_kernel", 2, 30000, 31000), marker(Kind::Pop, 2, 22000)});
  return p;
}

TEST(CaseTiming, ALaunchBoundCallWhoseHoldRanOutIsMarkedForItsLaunchGaps) {
  timing::TimedCalls calls{{0.011, 0.011}, {0.5, 0.5}, {1, 2}};
  calls.holds_outrun = true;
  auto cr = timed_case(calls);
  EXPECT_FALSE(timing::fill_probe_timing(cr, gapped_probe(), calls, "triton"));  // not a fault
  EXPECT_EQ(cr.timing_flags, "launch_gaps,host_bound");

  calls.holds_outrun = false;  // every batch queued before its hold ended: the gaps are the GPU's
  cr = timed_case(calls);
  EXPECT_FALSE(timing::fill_probe_timing(cr, gapped_probe(), calls, "triton"));
  EXPECT_EQ(cr.timing_flags, "host_bound");

  calls.holds_outrun = true;  // the same calls, but the GPU never idled inside them
  cr = timed_case(calls);
  EXPECT_FALSE(timing::fill_probe_timing(cr, own_kernel_probe(), calls, "triton"));
  EXPECT_EQ(cr.timing_flags, "host_bound");

  calls.host_ms = {0.001, 0.001};  // launched faster than they run: the GPU never waited
  cr = timed_case(calls);
  EXPECT_FALSE(timing::fill_probe_timing(cr, gapped_probe(), calls, "triton"));
  EXPECT_EQ(cr.timing_flags, "");

  calls.host_ms = {0.5, 0.5};
  calls.waits_on_host = true;  // already marked as waiting on the host
  cr = timed_case(calls);
  EXPECT_FALSE(timing::fill_probe_timing(cr, gapped_probe(), calls, "triton"));
  EXPECT_EQ(cr.timing_flags, "waits_on_host,host_bound");
}

// The same rule for a reference's eager calls, from what its worker reported (phases) and the
// probe's analysis of its timed calls: the mark goes into the case's phases (where the baseline
// cache keeps it) and from there into every candidate's flags as eager_launch_gaps.
TEST(CaseTiming, AnEagerBaselineThatWaitedForItsLaunchesIsMarked) {
  const auto gapped = timing::analyze_calls(*gapped_probe().index, {1, 2}, {});  // 80% idle
  const json launched = {{"eager_launch_ms", 0.5},  // one call took 0.5 ms to launch
                         {"eager_batch_count", 3},
                         {"eager_short_holds", 2}};
  json ev = {{"eager_ms", {0.011, 0.011}}, {"phases", launched}};
  EXPECT_TRUE(timing::mark_eager_launch_gaps(ev, gapped));
  EXPECT_EQ(ev["phases"]["eager_launch_gaps"], 1.0);
  store::CaseResult cr;
  timing::fill_timing(cr, ev, nullptr);
  EXPECT_EQ(cr.timing_flags, "eager_launch_gaps");

  auto unmarked = [&](json phases, const timing::ProbeTimes& calls) {
    json e = {{"eager_ms", {0.011, 0.011}}, {"phases", std::move(phases)}};
    const bool marked = timing::mark_eager_launch_gaps(e, calls);
    return !marked && !e["phases"].contains("eager_launch_gaps");
  };
  json held = launched;
  held["eager_short_holds"] = 1;  // most batches queued before their hold ended
  EXPECT_TRUE(unmarked(held, gapped));
  json quick = launched;
  quick["eager_launch_ms"] = 0.001;  // launched faster than it runs
  EXPECT_TRUE(unmarked(quick, gapped));
  json waits = launched;
  waits["eager_host_loop_ms"] = 0.3;  // eager_waits_on_host says it already
  EXPECT_TRUE(unmarked(waits, gapped));
  EXPECT_TRUE(unmarked(json::object(), gapped));  // a worker that did not report its launches
  const auto busy = timing::analyze_calls(*own_kernel_probe().index, {1, 2}, {"add_kernel"});
  EXPECT_TRUE(unmarked(launched, busy));  // the GPU never idled inside the calls
}

// Where kbx reads the reference worker's probe records (sched::time_by_probe): the eager spans
// replace the events, and the launch-gap rule runs on the same analysis.
TEST(CaseTiming, AReferencesProbeTimingCarriesItsLaunchGaps) {
  const timing::CallRecords index = *gapped_probe().index;
  json ev = {
      {"task", "L/qr"},
      {"case", "perf"},
      {"probe_ids", {1, 2}},
      {"eager_ms", {0.02, 0.02}},
      {"phases", {{"eager_launch_ms", 0.5}, {"eager_batch_count", 2}, {"eager_short_holds", 2}}}};
  EXPECT_TRUE(sched::time_by_probe(ev, index));
  EXPECT_EQ(ev["eager_probe_ms"], json({0.010, 0.010}));
  EXPECT_EQ(ev["phases"]["eager_launch_gaps"], 1.0);

  json unreported = {{"probe_ids", {1, 2}}, {"eager_ms", {0.02, 0.02}}};  // an older worker
  EXPECT_TRUE(sched::time_by_probe(unreported, index));
  EXPECT_FALSE(unreported.contains("phases"));

  json cut = ev;  // call 3 has no records: the events stand, unmarked
  cut["probe_ids"] = {1, 3};
  cut.erase("eager_probe_ms");
  cut["phases"].erase("eager_launch_gaps");
  EXPECT_FALSE(sched::time_by_probe(cut, index));
  EXPECT_FALSE(cut.contains("eager_probe_ms"));
  EXPECT_FALSE(cut["phases"].contains("eager_launch_gaps"));
}

TEST(CaseTiming, AFlagIsFoundAsAWholeWord) {
  EXPECT_TRUE(timing::has_flag("host_bound,launch_gaps", "launch_gaps"));
  EXPECT_TRUE(timing::has_flag("contended", "contended"));
  EXPECT_FALSE(timing::has_flag("eager_waits_on_host", "waits_on_host"));
  EXPECT_FALSE(timing::has_flag("", "contended"));
}

TEST(CaseTiming, TheFloorNeedsACalibration) {
  store::CaseResult cr;
  cr.cand_ms = 0.001;
  cr.bytes = 1e9;
  EXPECT_FALSE(timing::check_floor(cr, true, {}));
  EXPECT_EQ(cr.timing_flags, "no_floor");
  cr.timing_flags.clear();
  EXPECT_FALSE(timing::check_floor(cr, false, {}));
  EXPECT_EQ(cr.timing_flags, "same_values,no_floor");
}

TEST(CaseTiming, FasterThanTheRooflineIsImpossibleSpeed) {
  const std::map<std::string, double> peaks = {{"copy_bw", 1e12}};  // 1e9 bytes: 1 ms
  store::CaseResult cr;
  cr.bytes = 1e9;
  cr.cand_ms = 0.95;  // 105% of the roofline: timing error
  EXPECT_FALSE(timing::check_floor(cr, true, peaks));
  EXPECT_EQ(cr.timing_flags, "");
  cr.cand_ms = 0.5;
  auto bad = timing::check_floor(cr, true, peaks);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->fault, timing::Fault::ImpossibleSpeed);
  EXPECT_EQ(cr.timing_flags, "below_roofline");
  EXPECT_NE(bad->detail.find("200% of the roofline"), std::string::npos) << bad->detail;
}

TEST(CaseTiming, SpeedupsCompareOneClock) {
  store::CaseResult cr;
  cr.eager_samples = {4.0};       // eager by events only
  cr.cand_event_samples = {2.0};  // the candidate's events
  cr.cand_samples = {1.0};        // and its probe spans
  cr.timing_source = "probe";
  EXPECT_EQ(timing::same_clock_speedup(cr), 2.0);  // events with events
  EXPECT_EQ(cr.timing_flags, "eager_not_probe_timed");
  cr.timing_flags.clear();
  cr.eager_event_samples = {4.0};
  cr.eager_samples = {3.0};  // eager by the probe too: probe with probe
  EXPECT_EQ(timing::same_clock_speedup(cr), 3.0);
  EXPECT_EQ(cr.timing_flags, "");
}

TEST(CaseTiming, CallsTheProbeSawNoWorkInGetNoSpeedupFromTheirEvents) {
  // Every timed call pushed its id, none has a GPU record (a result in host memory, say): the
  // events time nothing the probe can check, so the case gets no speedup (not the events').
  timing::ProbeData p;
  p.expected = p.ok = true;
  p.index.emplace(std::vector<Record>{marker(Kind::Push, 1, 1000), marker(Kind::Pop, 1, 2000),
                                      marker(Kind::Push, 2, 3000), marker(Kind::Pop, 2, 4000)});
  const timing::TimedCalls calls{{0.0001, 0.0001}, {0.01, 0.01}, {1, 2}};
  auto cr = timed_case(calls);
  EXPECT_FALSE(timing::fill_probe_timing(cr, p, calls, "any"));
  EXPECT_EQ(cr.timing_flags, "calls_without_gpu_work");
  EXPECT_FALSE(cr.cand_ms);
  EXPECT_FALSE(timing::same_clock_speedup(cr));
}

TEST(CaseTiming, ATruncatedProbeStreamLeavesTheCaseUntimedNotAccused) {
  // A stream cut at its cap holds the first calls' records only: a candidate that floods it
  // could choose which cases are timed. None is; the values' verdict stands.
  auto p = own_kernel_probe();
  p.truncated = true;
  const timing::TimedCalls calls{{0.011, 0.012}, {0.001, 0.001}, {1, 2}};
  auto cr = timed_case(calls);
  EXPECT_FALSE(timing::fill_probe_timing(cr, p, calls, "triton"));
  EXPECT_EQ(cr.timing_flags, "probe_truncated");
  EXPECT_EQ(cr.timing_source, "untimed");
  EXPECT_FALSE(cr.cand_ms);
  EXPECT_EQ(cr.cand_event_samples, (std::vector<double>{0.011, 0.012}));
  EXPECT_FALSE(timing::same_clock_speedup(cr));
}

}  // namespace
}  // namespace kbx
