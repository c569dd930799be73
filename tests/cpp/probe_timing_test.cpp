#include "timing/probe_timing.h"

#include <gtest/gtest.h>

#include "sched/worker.h"

namespace kbx {
namespace {
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

/// Two timed calls of a candidate whose Triton function is "add_kernel": call 1 runs its own
/// kernel then a library kernel; call 2 runs its own kernel only.
std::vector<Record> two_calls() {
  return {marker(Kind::Push, 1, 1000),
          kernel("add_kernel", 1, 2000, 12000),
          kernel("void at::native::vectorized_elementwise_kernel<4>", 1, 14000, 16000),
          marker(Kind::Pop, 1, 3000),
          marker(Kind::Push, 2, 20000),
          kernel("add_kernel", 2, 21000, 31000),
          marker(Kind::Pop, 2, 22000)};
}

TEST(ProbeTiming, SpansBusyAndShare) {
  auto t = timing::analyze_calls(two_calls(), {1, 2}, {"add_kernel"});
  ASSERT_EQ(t.span_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(t.span_ms[0], 0.014);  // 2000 .. 16000 ns
  EXPECT_DOUBLE_EQ(t.busy_ms[0], 0.012);  // the gap between the kernels is not busy
  EXPECT_DOUBLE_EQ(t.span_ms[1], 0.010);
  ASSERT_TRUE(t.kernel_share.has_value());
  EXPECT_NEAR(*t.kernel_share, 20000.0 / 22000.0, 1e-12);
  EXPECT_EQ(t.unattributed_records, 0u);
  EXPECT_EQ(t.calls_without_work, 0u);
}

TEST(ProbeTiming, AReferencesSpansAreAllItsCallsOrNone) {
  // A reference's eager samples from the probe replace its CUDA events only when every timed
  // call has records; a stream cut after call 1 leaves call 2 without any.
  const timing::CallRecords both(two_calls());
  const auto calls = timing::every_call_analyzed(both, {1, 2});
  ASSERT_TRUE(calls);
  EXPECT_EQ(calls->span_ms.size(), 2u);
  EXPECT_EQ(calls->busy_ms.size(), 2u);
  auto cut = two_calls();
  cut.resize(4);  // call 1's push, kernels and pop
  EXPECT_FALSE(timing::every_call_analyzed(timing::CallRecords(cut), {1, 2}));
  EXPECT_TRUE(timing::every_call_analyzed(timing::CallRecords(cut), {1}));
}

TEST(ProbeTiming, LibraryKernelsLowerTheShare) {
  std::vector<Record> recs = {marker(Kind::Push, 7, 0),
                              kernel("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN", 7, 10, 1010),
                              kernel("tiny_triton_touch", 7, 1020, 1030), marker(Kind::Pop, 7, 5)};
  auto t = timing::analyze_calls(recs, {7}, {"tiny_triton_touch"});
  ASSERT_TRUE(t.kernel_share.has_value());
  EXPECT_LT(*t.kernel_share, 0.1);  // a torch.matmul in disguise: a fallback
}

// Kernel names PyTorch 2.x gives its copy, cast and fill kernels on the H200 (mangled, as CUPTI
// reports them), and compute kernels that must stay library work.
constexpr const char* kBroadcastCopy =
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_"
    "copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE8_clEvEUlfE_EEvS4_RKT_EUliE_"
    "EEviT1_";
constexpr const char* kCastCopy =
    "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_"
    "18TensorIteratorBaseEENKUlvE1_clEvENKUlvE4_clEvEUlN3c104HalfEE_St5arrayIPcLm2EE";
constexpr const char* kFill =
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_"
    "T1_";
constexpr const char* kBf16Copy =
    "void at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase &)::{lambda(float)#1}";
constexpr const char* kCat =
    "_ZN2at6native12_GLOBAL__N_119CatArrayBatchedCopyIfjLi2ELi128ELi1EEEvPT_NS1_"
    "25CatArrInputTensorMetadataIS3_T0_XT2_EXT3_EEENS1_16TensorSizeStrideIS6_Lj4EEEiS6_";
constexpr const char* kAddKernel =
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEv"
    "iT0_T1_";
constexpr const char* kSoftmax =
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(T2 *, "
    "const T1 *, int, int, int, const bool *, int, bool) [with at::native::...]";

TEST(ProbeTiming, GlueKernelNames) {
  for (const char* glue : {kBroadcastCopy, kCastCopy, kFill, kBf16Copy, kCat}) {
    EXPECT_TRUE(probe::looks_like_glue_kernel(glue)) << glue;
  }
  for (const char* compute :
       {kAddKernel, kSoftmax, "ampere_sgemm_128x64_nn", "nvjet_hsh_128x256_64x4_2x1_v_bz_coopB_NNT",
        "_Z28indexSelectLargeIndexIfjLi2ELi2ELin2ELb1EEvN2at4cuda6detail10TensorInfoIT_T0_EE"}) {
    EXPECT_FALSE(probe::looks_like_glue_kernel(compute)) << compute;
  }
  // A Triton function named like a copy is the candidate's own kernel, never glue.
  EXPECT_FALSE(probe::looks_like_glue_kernel("direct_copy_kernel_cuda"));
}

/// An honest add that broadcasts its bias through expand(...).contiguous(): the copy takes more
/// time than its own kernel. Glue, not fallback: the share stays 1, the glue share is reported.
TEST(ProbeTiming, BroadcastCopyIsGlueNotFallback) {
  std::vector<Record> recs = {marker(Kind::Push, 1, 0), kernel(kBroadcastCopy, 1, 100, 640),
                              kernel("add_kernel", 1, 650, 1110), marker(Kind::Pop, 1, 50)};
  auto t = timing::analyze_calls(recs, {1}, {"add_kernel"});
  ASSERT_TRUE(t.kernel_share && t.glue_share);
  EXPECT_DOUBLE_EQ(*t.kernel_share, 1.0);
  EXPECT_NEAR(*t.glue_share, 540.0 / 1000.0, 1e-12);
}

/// A softmax over dim 0 through a transposing copy in and out, plus a fill and a memset.
TEST(ProbeTiming, TransposeCastAndFillAreGlue) {
  Record memset;
  memset.kind = Kind::Memset;
  memset.external_id = 1;
  memset.start_ns = 3000;
  memset.end_ns = 3100;
  std::vector<Record> recs = {marker(Kind::Push, 1, 0),
                              kernel(kBroadcastCopy, 1, 100, 1000),
                              kernel("softmax_kernel", 1, 1000, 1200),
                              kernel(kCastCopy, 1, 1200, 2000),
                              kernel(kFill, 1, 2000, 2100),
                              memset,
                              marker(Kind::Pop, 1, 50)};
  auto t = timing::analyze_calls(recs, {1}, {"softmax_kernel"});
  ASSERT_TRUE(t.kernel_share && t.glue_share);
  EXPECT_DOUBLE_EQ(*t.kernel_share, 1.0);
  EXPECT_NEAR(*t.glue_share, 1900.0 / 2100.0, 1e-12);
}

/// Library compute behind a token Triton launch stays fallback, glue or not around it.
TEST(ProbeTiming, MatmulBehindTokenLaunchIsStillFallback) {
  std::vector<Record> recs = {marker(Kind::Push, 7, 0), kernel(kFill, 7, 5, 9),
                              kernel("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN", 7, 10, 1010),
                              kernel("tiny_triton_touch", 7, 1020, 1030), marker(Kind::Pop, 7, 5)};
  auto t = timing::analyze_calls(recs, {7}, {"tiny_triton_touch"});
  ASSERT_TRUE(t.kernel_share.has_value());
  EXPECT_LT(*t.kernel_share, 0.1);
}

/// In a task whose work is data movement (a gather, a permute), copies are the op's work:
/// torch's copy behind a token launch is a fallback there.
TEST(ProbeTiming, GlueIsLibraryWorkInDataMovementTasks) {
  std::vector<Record> recs = {marker(Kind::Push, 1, 0), kernel(kBroadcastCopy, 1, 100, 1100),
                              kernel("token_kernel", 1, 1100, 1110), marker(Kind::Pop, 1, 50)};
  auto as_glue = timing::analyze_calls(recs, {1}, {"token_kernel"});
  EXPECT_DOUBLE_EQ(*as_glue.kernel_share, 1.0);
  auto as_work = timing::analyze_calls(recs, {1}, {"token_kernel"}, /*glue_is_work=*/true);
  ASSERT_TRUE(as_work.kernel_share.has_value());
  EXPECT_LT(*as_work.kernel_share, 0.05);
  EXPECT_NEAR(*as_work.glue_share, 1000.0 / 1010.0, 1e-12);
}

TEST(ProbeTiming, UntaggedWorkInsideACallIsUnattributed) {
  auto recs = two_calls();
  recs.push_back(kernel("other_thread_kernel", 0, 5000, 6000));  // no id, inside call 1
  recs.push_back(kernel("before_timing", 0, 100, 200));          // outside every window
  auto t = timing::analyze_calls(recs, {1, 2}, {"add_kernel"});
  EXPECT_EQ(t.unattributed_records, 1u);
  EXPECT_EQ(t.unattributed_example, "other_thread_kernel");
}

TEST(ProbeTiming, TheTimersOwnTaggedWorkIsNotUnattributed) {
  auto recs = two_calls();
  const std::uint64_t harness = (1ULL << 62) | 9;  // the L2 scrub, still running on the GPU
  recs.push_back(kernel("at::native::FillFunctor", harness, 1500, 2500));
  auto t = timing::analyze_calls(recs, {1, 2}, {"add_kernel"});
  EXPECT_EQ(t.unattributed_records, 0u);
  EXPECT_DOUBLE_EQ(t.span_ms[0], 0.014);  // and not part of the call's span
}

/// A batch as the timer queues it behind a hold: harness work (hold and scrub) id 0|H, call 1,
/// scrub 2|H, call 3, end marker 4|H. Host markers all come long before the GPU runs the calls.
constexpr std::uint64_t H = timing::kHarnessBit;
std::vector<Record> held_batch() {
  return {marker(Kind::Push, H | 0, 100),
          kernel("sleep_kernel", H | 0, 1000, 50000),
          kernel("FillFunctor", H | 0, 50000, 60000),
          marker(Kind::Pop, H | 0, 110),
          marker(Kind::Push, 1, 120),
          kernel("add_kernel", 1, 60500, 70000),
          marker(Kind::Pop, 1, 130),
          marker(Kind::Push, H | 2, 140),
          kernel("FillFunctor", H | 2, 70500, 80000),
          marker(Kind::Pop, H | 2, 150),
          marker(Kind::Push, 3, 160),
          kernel("add_kernel", 3, 80500, 90000),
          marker(Kind::Pop, 3, 170),
          marker(Kind::Push, H | 4, 180),
          kernel("FillFunctor", H | 4, 90200, 90300),
          marker(Kind::Pop, H | 4, 190)};
}

TEST(ProbeTiming, AHeldBatchIsCleanAndTimedOnTheGpu) {
  auto t = timing::analyze_calls(held_batch(), {1, 3}, {"add_kernel"});
  ASSERT_EQ(t.span_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(t.span_ms[0], 0.0095);
  EXPECT_EQ(t.unattributed_records, 0u);
  EXPECT_EQ(t.escaped_records, 0u);
}

TEST(ProbeTiming, UntaggedWorkBetweenTheTimersWorkIsUnattributedWhenTheHostMarkersAreLongPast) {
  auto recs = held_batch();
  // launched by another thread while call 3 ran on the host; on the GPU it runs in call 3's
  // window, long after both of its host markers
  recs.push_back(kernel("gelu_from_a_thread", 0, 80600, 85000));
  auto t = timing::analyze_calls(recs, {1, 3}, {"add_kernel"});
  EXPECT_EQ(t.unattributed_records, 1u);
  EXPECT_EQ(t.unattributed_example, "gelu_from_a_thread");
}

TEST(ProbeTiming, ACallWithNoWorkOfItsOwnStillHasItsWindowChecked) {
  std::vector<Record> recs;
  for (const auto& r : held_batch()) {
    if (r.external_id != 3 || r.kind != Kind::Kernel) recs.push_back(r);
  }
  recs.push_back(kernel("gelu_from_a_thread", 0, 80600, 85000));
  auto t = timing::analyze_calls(recs, {1, 3}, {"add_kernel"});
  EXPECT_EQ(t.calls_without_work, 1u);
  EXPECT_EQ(t.unattributed_records, 1u);
}

TEST(ProbeTiming, WorkStillRunningAfterTheCallEndedOnItsStreamEscaped) {
  auto recs = held_batch();
  // call 3's kernel on a side stream nobody waited for: it overlaps the end marker
  for (auto& r : recs) {
    if (r.external_id == 3 && r.kind == Kind::Kernel) r.end_ns = 95000;
  }
  auto t = timing::analyze_calls(recs, {1, 3}, {"add_kernel"});
  EXPECT_EQ(t.escaped_records, 1u);
  EXPECT_EQ(t.escaped_example, "add_kernel");
  // the same kernel joined back (the marker waits for it) is clean
  for (auto& r : recs) {
    if (r.external_id == (H | 4)) r.start_ns = 95100, r.end_ns = 95200;
  }
  EXPECT_EQ(timing::analyze_calls(recs, {1, 3}, {"add_kernel"}).escaped_records, 0u);
}

Record upload(std::uint64_t id, std::uint64_t start, std::uint64_t end, std::uint64_t bytes) {
  Record r;
  r.kind = Kind::Memcpy;
  r.detail = 1;  // CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
  r.external_id = id;
  r.start_ns = start;
  r.end_ns = end;
  r.bytes = bytes;
  return r;
}

TEST(ProbeTiming, AResultComputedOnTheCpuAndUploadedIsMostlyUploads) {
  auto recs = held_batch();
  // each call uploads 64 MiB, for longer than its own (token) kernel runs
  recs.push_back(upload(1, 60000, 60400, 64u << 20));
  recs.push_back(upload(3, 80000, 80400, 64u << 20));
  for (auto& r : recs) {
    if ((r.external_id == 1 || r.external_id == 3) && r.kind == Kind::Kernel) {
      r.start_ns = r.end_ns - 100;  // a token Triton launch
    }
  }
  auto t = timing::analyze_calls(recs, {1, 3}, {"add_kernel"});
  EXPECT_EQ(t.upload_bytes, 2ull * (64u << 20));
  EXPECT_TRUE(timing::mostly_uploads(t, 2));
}

TEST(ProbeTiming, SmallUploadsOfScalarsAreNotHostWork) {
  auto recs = held_batch();
  recs.push_back(upload(1, 60000, 60400, 4));  // torch.tensor(alpha, device=...) in the call
  recs.push_back(upload(3, 80000, 80400, 4));
  auto t = timing::analyze_calls(recs, {1, 3}, {"add_kernel"});
  EXPECT_FALSE(timing::mostly_uploads(t, 2));
}

TEST(ProbeTiming, PushedCallsWithoutRecordsAreCounted) {
  auto t = timing::analyze_calls(two_calls(), {1, 2, 3}, {"add_kernel"});
  EXPECT_EQ(t.calls_without_work, 1u);
  EXPECT_EQ(t.span_ms.size(), 2u);
}

TEST(ProbeTiming, EventsShorterThanTheProbeDisagree) {
  EXPECT_FALSE(timing::events_disagree(0.105, 0.100));   // events bracket launches: longer
  EXPECT_FALSE(timing::events_disagree(0.099, 0.100));   // within the bound
  EXPECT_TRUE(timing::events_disagree(0.010, 0.100));    // side stream, or a patched timer
  EXPECT_FALSE(timing::events_disagree(0.0005, 0.002));  // tiny calls: 2 µs of slack
}

TEST(ProbeTiming, AWorkersStreamIsReadWithItsTruncation) {
  std::vector<std::byte> bytes;
  probe::append_header(bytes, probe::Header{});
  for (const auto& r : two_calls()) probe::append_record(bytes, r);
  sandbox::Outcome o;
  o.probe_bytes.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::vector<Record> records;
  std::string error;
  EXPECT_TRUE(sched::probe_records(o, &records, &error));
  EXPECT_EQ(records.size(), two_calls().size());
  o.probe_bytes.resize(o.probe_bytes.size() - 10);  // cut inside the last record
  EXPECT_FALSE(sched::probe_records(o, &records, &error));
  EXPECT_FALSE(error.empty());
  o.probe_truncated = true;  // cut by the supervisor's bound: what came is kept
  EXPECT_TRUE(sched::probe_records(o, &records, &error));
  EXPECT_EQ(records.size(), two_calls().size() - 1);
}

}  // namespace
}  // namespace kbx
