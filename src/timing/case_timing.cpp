#include "timing/case_timing.h"

#include <fmt/format.h>

#include "timing/guards.h"
#include "timing/stats.h"

namespace kbx::timing {
using nlohmann::json;

namespace {

/// The fault of a probe that did not give usable records, if any.
std::optional<Violation> unusable_probe(store::CaseResult& cr, const ProbeData& p,
                                        const TimedCalls& timed) {
  if (!p.ok && p.harness_problem) {  // this machine's probe failed: time by events, say so
    add_flag(cr.timing_flags, "probe_silent");
    return std::nullopt;
  }
  if (!p.ok) return Violation{Fault::TimingMismatch, p.problem};
  if (timed.probe_ids.empty()) {
    return Violation{Fault::TimingMismatch, "the timed calls were not marked for the probe"};
  }
  return std::nullopt;
}

/// Whether launching a call took the host longer than running it took the GPU (medians).
bool launches_slower(std::optional<double> launch_median_ms, std::optional<double> span_median_ms) {
  return launch_median_ms && span_median_ms && *launch_median_ms > *span_median_ms;
}

/// launches_slower for a candidate's timed calls: the host's samples against the GPU's.
bool launches_slower_than_it_runs(const store::CaseResult& cr) {
  return launches_slower(median(cr.cand_host_samples), cr.cand_ms);
}

/// The fault the analysed records show, if any, in the order they are looked for.
std::optional<Violation> probe_fault(store::CaseResult& cr, const ProbeTimes& t, std::size_t calls,
                                     const ProbeData& p, const std::string& track) {
  if (t.unattributed_records) {
    add_flag(cr.timing_flags, "unattributed_work");
    return Violation{Fault::UnattributedWork,
                     fmt::format("{} GPU records not launched by the timed call ran inside it "
                                 "(e.g. {})",
                                 t.unattributed_records, t.unattributed_example)};
  }
  if (launches_slower_than_it_runs(cr)) add_flag(cr.timing_flags, "host_bound");
  if (mostly_uploads(t, calls)) {
    add_flag(cr.timing_flags, "host_work");
    return Violation{Fault::UnattributedWork,
                     fmt::format("the timed calls' GPU work was mostly copies from host memory "
                                 "({:.1f} MiB per call, {:.3f} ms of uploads against {:.3f} ms in "
                                 "the candidate's kernels): the result was computed on the CPU, "
                                 "which the GPU clock does not see",
                                 static_cast<double>(t.upload_bytes) / calls / (1 << 20),
                                 static_cast<double>(t.upload_ns) * 1e-6,
                                 static_cast<double>(t.candidate_ns) * 1e-6)};
  }
  if (t.escaped_records) {
    add_flag(cr.timing_flags, "escaped_work");
    return Violation{Fault::TimingMismatch,
                     fmt::format("{} GPU records of the timed calls were still running after the "
                                 "call had ended on its stream (work on a stream that was not "
                                 "waited for, e.g. {})",
                                 t.escaped_records, t.escaped_example)};
  }
  if (track == "triton" && t.kernel_share && *t.kernel_share < 0.5) {
    add_flag(cr.timing_flags, "fallback");
    return Violation{Fault::Fallback,
                     fmt::format("{:.0f}% of the timed calls' compute kernel time was in library "
                                 "kernels, not the candidate's own (copies, casts and fills, "
                                 "{:.0f}% of the GPU time, are glue and not counted here{})",
                                 100 * (1 - *t.kernel_share), 100 * t.glue_share.value_or(0),
                                 p.glue_is_work ? ", except in this data-movement task" : "")};
  }
  if (cr.cand_ms && cr.cand_event_ms && events_disagree(*cr.cand_event_ms, *cr.cand_ms)) {
    add_flag(cr.timing_flags, "events_disagree");
    return Violation{Fault::TimingMismatch,
                     fmt::format("CUDA events say {:.4f} ms per call, the probe's records {:.4f} "
                                 "ms (work outside the timed stream, or a patched timer)",
                                 *cr.cand_event_ms, *cr.cand_ms)};
  }
  return std::nullopt;
}

}  // namespace

bool has_flag(const std::string& flags, const std::string& flag) {
  return ("," + flags + ",").find("," + flag + ",") != std::string::npos;
}

void add_flag(std::string& flags, const std::string& flag) {
  flags += (flags.empty() ? "" : ",") + flag;
}

std::vector<double> compile_samples(const json& ref_ev) {
  const char* key = ref_ev.contains("compile_probe_ms") ? "compile_probe_ms" : "compile_ms";
  return ref_ev.value(key, std::vector<double>{});
}

std::string compute_dtype(const json& ref_ev) {
  if (ref_ev.contains("cost") && ref_ev["cost"].contains("compute")) {
    return ref_ev["cost"].value("compute", "");
  }
  std::string first;
  for (const auto& leaf : ref_ev.value("outputs", json::array())) {
    const std::string d = leaf.value("dtype", "");
    if (d.empty()) continue;
    if (first.empty()) first = d;
    if (d.find("float") != std::string::npos) return d;
  }
  return first;
}

void fill_timing(store::CaseResult& cr, const json& ref_ev, const TimedCalls* timed) {
  if (ref_ev.contains("cost")) {
    cr.flops = ref_ev["cost"].value("flops", 0.0);
    cr.bytes = ref_ev["cost"].value("bytes", 0.0);
  }
  cr.dtype = compute_dtype(ref_ev);
  cr.eager_samples = ref_ev.value("eager_ms", std::vector<double>{});
  if (ref_ev.contains("eager_probe_ms")) {  // the reference worker ran under the probe too
    cr.eager_event_samples = cr.eager_samples;
    cr.eager_event_ms = median(cr.eager_event_samples);
    cr.eager_samples = ref_ev.value("eager_probe_ms", std::vector<double>{});
  }
  cr.eager_ms = median(cr.eager_samples);
  cr.compile_samples = compile_samples(ref_ev);
  cr.compile_ms = median(cr.compile_samples);
  // the reference worker timed the eager call as one that waits on the host (timed in this run;
  // cached eager timings keep no phases)
  if (ref_ev.contains("phases") && ref_ev["phases"].is_object()) {
    if (ref_ev["phases"].contains("eager_host_loop_ms")) {
      add_flag(cr.timing_flags, "eager_waits_on_host");
    }
    if (ref_ev["phases"].value("eager_launch_gaps", 0.0) > 0) {
      add_flag(cr.timing_flags, "eager_launch_gaps");
    }
  }
  if (!timed) return;
  cr.cand_samples = timed->ms;
  cr.cand_ms = median(cr.cand_samples);
  if (cr.timing_source.empty()) cr.timing_source = "events";
  cr.cand_host_samples = timed->host_ms;
  if (timed->contended) add_flag(cr.timing_flags, "contended");
  if (timed->starved) add_flag(cr.timing_flags, "starved");
  if (timed->waits_on_host) add_flag(cr.timing_flags, "waits_on_host");
}

std::optional<double> idle_share(const ProbeTimes& t) {
  std::vector<double> shares;
  for (std::size_t k = 0; k < t.span_ms.size() && k < t.busy_ms.size(); ++k) {
    if (t.span_ms[k] > 0) shares.push_back(std::max(0.0, 1.0 - t.busy_ms[k] / t.span_ms[k]));
  }
  return median(shares);
}

bool waited_for_launches(bool holds_outrun, std::optional<double> launch_median_ms,
                         std::optional<double> span_median_ms, std::optional<double> idle) {
  return holds_outrun && launches_slower(launch_median_ms, span_median_ms) && idle &&
         *idle > kLaunchGapIdleShare;
}

bool mark_eager_launch_gaps(json& ref_ev, const ProbeTimes& eager) {
  if (!ref_ev.contains("phases") || !ref_ev["phases"].is_object()) return false;
  json& phases = ref_ev["phases"];
  if (phases.contains("eager_host_loop_ms") || !phases.contains("eager_launch_ms")) return false;
  const bool outrun =
      most_holds_outrun(static_cast<std::int64_t>(phases.value("eager_batch_count", 0.0)),
                        static_cast<std::int64_t>(phases.value("eager_short_holds", 0.0)));
  if (!waited_for_launches(outrun, phases.value("eager_launch_ms", 0.0), median(eager.span_ms),
                           idle_share(eager))) {
    return false;
  }
  phases["eager_launch_gaps"] = 1.0;
  return true;
}

namespace {

/// A call that launches slower than it runs, in batches that took longer to queue than their
/// hold lasted, and whose GPU sat idle inside it: it waited for its own launches, and its time
/// follows the host's speed (a mark for the results, report::follows_host; never a fault).
void flag_launch_gaps(store::CaseResult& cr, const ProbeTimes& t, const TimedCalls& timed) {
  if (!timed.waits_on_host && waited_for_launches(timed.holds_outrun, median(cr.cand_host_samples),
                                                  cr.cand_ms, idle_share(t))) {
    add_flag(cr.timing_flags, "launch_gaps");
  }
}

}  // namespace

std::optional<Violation> fill_probe_timing(store::CaseResult& cr, const ProbeData& p,
                                           const TimedCalls& timed, const std::string& track) {
  if (!p.ok || timed.probe_ids.empty()) return unusable_probe(cr, p, timed);
  if (p.truncated) {  // untimed, not accused: an honest flood of launches is only slow
    add_flag(cr.timing_flags, "probe_truncated");
    cr.cand_event_samples = std::move(cr.cand_samples);
    cr.cand_event_ms = cr.cand_ms;
    cr.cand_samples.clear();
    cr.cand_ms.reset();
    cr.timing_source = "untimed";
    return std::nullopt;
  }
  const ProbeTimes t = analyze_calls(*p.index, timed.probe_ids, p.triton_functions, p.glue_is_work);
  cr.cand_event_samples = cr.cand_samples;
  cr.cand_event_ms = cr.cand_ms;
  cr.cand_samples = t.span_ms;
  cr.cand_ms = median(cr.cand_samples);
  cr.timing_source = "probe";
  cr.kernel_share = t.kernel_share;
  cr.glue_share = t.glue_share;
  if (t.calls_without_work) add_flag(cr.timing_flags, "calls_without_gpu_work");
  flag_launch_gaps(cr, t, timed);
  return probe_fault(cr, t, timed.probe_ids.size(), p, track);
}

std::optional<Violation> check_floor(store::CaseResult& cr, bool varied_values,
                                     const std::map<std::string, double>& peaks) {
  if (!varied_values) add_flag(cr.timing_flags, "same_values");
  if (peaks.empty()) {
    add_flag(cr.timing_flags, "no_floor");
    return std::nullopt;
  }
  if (!cr.cand_ms) return std::nullopt;
  const auto floor = roofline_floor(cr.flops.value_or(0), cr.bytes.value_or(0), cr.dtype, peaks);
  if (!floor || !below_floor(*cr.cand_ms, *floor)) return std::nullopt;
  add_flag(cr.timing_flags, "below_roofline");
  return Violation{Fault::ImpossibleSpeed,
                   fmt::format("timed at {:.4f} ms per call, but the cost model's work needs at "
                               "least {:.4f} ms at the calibrated peaks ({}): {:.0f}% of the "
                               "roofline, beyond the {:.0f}% that timing error allows",
                               *cr.cand_ms, floor->ms, floor->basis, 100 * floor->ms / *cr.cand_ms,
                               100 * kFloorMargin)};
}

std::optional<double> same_clock_speedup(store::CaseResult& cr) {
  static const std::vector<double> none;
  const bool eager_by_probe = !cr.eager_event_samples.empty();
  const bool cand_by_probe = cr.timing_source == "probe";
  // The probe saw no GPU work in any timed call (results from host memory, say): the CUDA
  // events of such calls time nothing, and the floor (on the probe's time) could not check them.
  // (An untimed case, `probe_truncated`, has no candidate samples on either clock: no speedup.)
  if (cand_by_probe && cr.cand_samples.empty()) return std::nullopt;
  if (cand_by_probe && !eager_by_probe) add_flag(cr.timing_flags, "eager_not_probe_timed");
  return same_clock_speedup(eager_by_probe ? cr.eager_samples : none,
                            eager_by_probe ? cr.eager_event_samples : cr.eager_samples,
                            cand_by_probe ? cr.cand_samples : none,
                            cand_by_probe ? cr.cand_event_samples : cr.cand_samples);
}

}  // namespace kbx::timing
