// Grouping, spans, busy time, call windows, unattributed work and kernel origins, on the
// call_trace.bin fixture and on hand-built records. Expected values are worked out by hand from
// the timeline in tests/fixtures/probe/make_fixtures.py.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "kbx/probe_records.h"

namespace kbx::probe {
namespace {

using test::activity;
using test::T;

const std::vector<std::string> kTriton = {"add_kernel", "matmul_kernel"};

TEST(ProbeAnalysis, GroupByExternalId) {
  const auto groups = group_by_external_id(test::call_trace());
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(groups.at(1).size(), 4u);  // memset, add_kernel x2, aten fill; no markers, no id 0
  ASSERT_EQ(groups.at(2).size(), 3u);
  EXPECT_EQ(groups.at(1)[0].kind, Kind::Memset);
  EXPECT_EQ(groups.at(1)[3].stream_id, 13u);  // the side-stream launch is the call's too
  EXPECT_EQ(groups.at(2)[0].name_view(), "matmul_kernel");
}

TEST(ProbeAnalysis, DeviceSpanPerCall) {
  const auto groups = group_by_external_id(test::call_trace());
  EXPECT_EQ(device_span(groups.at(1)), (Interval{T + 1'000, T + 18'000}));
  EXPECT_EQ(device_span(groups.at(2)), (Interval{T + 41'000, T + 62'000}));
  EXPECT_EQ(device_span(groups.at(1))->length_ns(), 17'000u);
  EXPECT_FALSE(device_span({}).has_value());
}

TEST(ProbeAnalysis, BusyTimePerCall) {
  const auto groups = group_by_external_id(test::call_trace());
  // [1000,2000) + [3000,13000) u [8000,18000) u [13500,15500) = 1000 + 15000
  EXPECT_EQ(busy_ns(groups.at(1)), 16'000u);
  // [41000,51000) + [51000,61000) touch, + [61500,62000)
  EXPECT_EQ(busy_ns(groups.at(2)), 20'500u);
}

TEST(ProbeAnalysis, BusyTimeIntervals) {
  const std::vector<Record> disjoint = {activity(20, 25), activity(0, 10)};
  EXPECT_EQ(busy_ns(disjoint), 15u);
  const std::vector<Record> nested = {activity(0, 100), activity(10, 20), activity(50, 100)};
  EXPECT_EQ(busy_ns(nested), 100u);
  const std::vector<Record> chained = {activity(0, 10), activity(5, 15), activity(12, 30),
                                       activity(40, 41)};
  EXPECT_EQ(busy_ns(chained), 31u);
  const std::vector<Record> touching = {activity(0, 10), activity(10, 20)};
  EXPECT_EQ(busy_ns(touching), 20u);
  const std::vector<Record> same = {activity(5, 9), activity(5, 9)};
  EXPECT_EQ(busy_ns(same), 4u);
  EXPECT_EQ(busy_ns({}), 0u);
}

TEST(ProbeAnalysis, UntimedAndMarkerRecordsAreIgnored) {
  Record untimed = activity(0, 1'000);
  untimed.flags = kNoTimestamp;
  Record push = activity(0, 1'000);
  push.kind = Kind::Push;
  const std::vector<Record> records = {untimed, push, activity(100, 200, 0, Kind::Memcpy)};
  EXPECT_EQ(busy_ns(records), 100u);
  EXPECT_EQ(device_span(records), (Interval{100, 200}));
}

TEST(ProbeAnalysis, CallWindowFromMarkersAndRecords) {
  const auto trace = test::call_trace();
  // Push at 0, pop at 6000 (the host returns before the GPU ends at 18000).
  EXPECT_EQ(call_window(trace, 1), (Interval{T, T + 18'000}));
  EXPECT_EQ(call_window(trace, 2), (Interval{T + 40'000, T + 62'000}));
  EXPECT_FALSE(call_window(trace, 3).has_value());
}

TEST(ProbeAnalysis, CallWindowWithoutMarkersIsTheSpan) {
  const std::vector<Record> records = {activity(50, 60, 7), activity(10, 20, 7),
                                       activity(0, 100, 8)};
  EXPECT_EQ(call_window(records, 7), (Interval{10, 60}));
}

TEST(ProbeAnalysis, CallWindowWithMarkersOnly) {
  Record push = activity(100, 100, 5);
  push.kind = Kind::Push;
  Record pop = activity(400, 400, 5);
  pop.kind = Kind::Pop;
  const std::vector<Record> records = {push, pop};
  EXPECT_EQ(call_window(records, 5), (Interval{100, 400}));
}

TEST(ProbeAnalysis, UnattributedDuringACall) {
  const auto trace = test::call_trace();
  const auto first = unattributed(trace, *call_window(trace, 1));
  ASSERT_EQ(first.size(), 1u);  // the other thread's kernel; the later memcpy is outside
  EXPECT_EQ(first[0].correlation_id, 109u);
  EXPECT_EQ(first[0].stream_id, 21u);
  EXPECT_TRUE(unattributed(trace, *call_window(trace, 2)).empty());
  EXPECT_EQ(unattributed(trace, Interval{T + 29'000, T + 40'000}).size(), 1u);  // the memcpy
}

TEST(ProbeAnalysis, UnattributedEdges) {
  const Interval w{100, 200};
  const std::vector<Record> records = {
      activity(50, 100),      // ends as the window starts: outside
      activity(200, 300),     // starts as it ends: outside
      activity(50, 101),      // overlaps the start
      activity(199, 300),     // overlaps the end
      activity(0, 1'000),     // covers it
      activity(100, 100),     // zero length at the start: inside
      activity(150, 160, 9),  // attributed: never reported
  };
  const auto out = unattributed(records, w);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].start_ns, 50u);
  EXPECT_EQ(out[0].end_ns, 101u);
  EXPECT_EQ(out[3].start_ns, 100u);
}

struct NameCase {
  const char* name;
  KernelOrigin origin;
};

TEST(ProbeAnalysis, ClassifyKernelNames) {
  const NameCase cases[] = {
      {"add_kernel", KernelOrigin::Candidate},
      {"matmul_kernel", KernelOrigin::Candidate},
      {"add_kernel_0d1d2de", KernelOrigin::Candidate},  // older Triton specialisation suffix
      {"add_kernel_0", KernelOrigin::Candidate},
      {"add_kernel2", KernelOrigin::Unknown},
      {"add_kernel_fast", KernelOrigin::Unknown},
      {"add_kernel_", KernelOrigin::Unknown},
      {"sub_kernel", KernelOrigin::Unknown},
      {"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
       "11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
       KernelOrigin::Library},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, T2, "
       "T3)",
       KernelOrigin::Library},
      {"void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(T2 "
       "*, "
       "const T1 *, int, int, int, const bool *, int, bool) [with at::native::...]",
       KernelOrigin::Library},
      {"_Z28indexSelectLargeIndexIfjLi2ELi2ELin2ELb1EEvN2at4cuda6detail10TensorInfoIT_T0_EE",
       KernelOrigin::Library},
      {"_ZN3c1013CUDAFunctionsE", KernelOrigin::Library},
      {"sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
       "segment_k_off_kernel__5x_cublas",
       KernelOrigin::Library},
      {"ampere_sgemm_128x64_nn", KernelOrigin::Library},
      {"nvjet_hsh_128x256_64x4_2x1_v_bz_coopB_NNT", KernelOrigin::Library},
      {"cutlass_80_tensorop_s16816gemm_relu_f16_64x64_32x6_nn_align8", KernelOrigin::Library},
      {"_ZN7cutlass7Kernel2I", KernelOrigin::Library},
      {"_Z17gemv2T_kernel_valIiiffffLi128ELi16ELi4ELi4ELb0ELb0EN7cublasLt", KernelOrigin::Library},
      {"_Z19splitKreduce_kernelILi32ELi16EiffffLb1ELb0ELb0ELb0EEv18cublasSplitKParamsIT4_E",
       KernelOrigin::Library},
      {"cudnn::detail::implicit_convolve_sgemm", KernelOrigin::Library},
      {"_ZN5cudnn3cnn5infer", KernelOrigin::Library},
      {"_ZN6at_cuda_detail3cub18CUB_200200_900_NS11DeviceScanKernel", KernelOrigin::Library},
      {"_ZN5flash13flash_fwd_kernelI", KernelOrigin::Library},
      {"fmha_cutlassF_f16_aligned_64x64_rf_sm80", KernelOrigin::Library},
      {"triton_poi_fused_add_0", KernelOrigin::Inductor},
      {"triton_red_fused_sum_1", KernelOrigin::Inductor},
      {"", KernelOrigin::Unknown},
  };
  for (const NameCase& c : cases) {
    EXPECT_EQ(origin_name(classify_kernel(c.name, kTriton)), origin_name(c.origin)) << c.name;
  }
}

TEST(ProbeAnalysis, CandidateNamesDoNotClaimLibraryKernels) {
  const std::vector<std::string> spoof = {"ampere_sgemm_128x64_nn", "triton_poi_fused_add_0"};
  EXPECT_EQ(classify_kernel("ampere_sgemm_128x64_nn", spoof), KernelOrigin::Library);
  EXPECT_TRUE(looks_like_library_kernel("ampere_sgemm_128x64_nn"));
  // A candidate may use an Inductor-style name for its own function.
  EXPECT_EQ(classify_kernel("triton_poi_fused_add_0", spoof), KernelOrigin::Candidate);
  EXPECT_FALSE(looks_like_library_kernel("fused_softmax_kernel"));
  EXPECT_EQ(classify_kernel("add_kernel", std::span<const std::string>{}), KernelOrigin::Unknown);
}

TEST(ProbeAnalysis, TruncatedNamesMatchByPrefix) {
  const std::string long_fn = "fused_" + std::string(250, 'x') + "_kernel";
  const std::vector<std::string> fns = {long_fn};
  Record r;
  r.set_name(long_fn);
  ASSERT_TRUE(r.has(kNameTruncated));
  EXPECT_EQ(classify_kernel(r, fns), KernelOrigin::Candidate);
  // The same prefix without the truncation flag is not the function.
  EXPECT_EQ(classify_kernel(r.name_view(), fns, false), KernelOrigin::Unknown);
  const std::vector<std::string> other = {"fused_" + std::string(250, 'x') + "_other"};
  EXPECT_EQ(classify_kernel(r, other), KernelOrigin::Candidate);  // indistinguishable when cut
  const std::vector<std::string> shorter = {"fused_xxx"};
  EXPECT_EQ(classify_kernel(r, shorter), KernelOrigin::Unknown);
}

TEST(ProbeAnalysis, AttributionPerCall) {
  const auto groups = group_by_external_id(test::call_trace());
  const Attribution first = attribute(groups.at(1), kTriton);
  EXPECT_EQ(first.candidate_ns, 20'000u);  // add_kernel on two streams
  EXPECT_EQ(first.library_ns, 0u);
  EXPECT_EQ(first.glue_ns, 2'000u);  // aten fill: glue
  EXPECT_EQ(first.copy_ns, 1'000u);  // memset: glue
  EXPECT_EQ(first.all_glue_ns(), 3'000u);
  EXPECT_EQ(first.kernel_ns(), 20'000u);
  EXPECT_DOUBLE_EQ(first.candidate_share(), 1.0);

  const Attribution second = attribute(groups.at(2), kTriton);
  EXPECT_EQ(second.candidate_ns, 10'000u);
  EXPECT_EQ(second.library_ns, 10'000u);  // cuBLAS
  EXPECT_EQ(second.glue_ns, 500u);        // the truncated aten copy kernel
  EXPECT_EQ(second.copy_ns, 0u);
  EXPECT_EQ(Attribution{}.candidate_share(), 0.0);
}

}  // namespace
}  // namespace kbx::probe
