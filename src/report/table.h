#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "store/calibration.h"
#include "store/store.h"

namespace kbx::report {

/// Each run's fingerprint and calibration, by run id; a run that is absent has neither, and
/// its results get achieved rates but no roofline fractions.
using RunCalibrations = std::map<std::int64_t, store::RunCalibration>;

/// Where a timed case stands against the machine's peaks.
struct CaseRoofline {
  std::optional<double> achieved_flops;        ///< flops / candidate median time
  std::optional<double> achieved_bytes_per_s;  ///< bytes / candidate median time
  std::optional<double> roofline_fraction;     ///< roofline time / candidate median time
  std::string peak;   ///< the compute peak used ("fp32", "bf16", ...); "" when bytes only
  std::string basis;  ///< the peaks the roofline time came from: "bf16+copy_bw", "copy_bw", ...
  std::string note;   ///< why a compute peak was not used, when it was not
};

/// Where each method's rows come from: a method's results are all of its runs, so its rows may
/// span several runs and several environments (GPU, driver, torch, triton: the run fingerprint).
struct MethodEnvironments {
  int tasks = 0;                          ///< its rows: one verdict per task
  std::vector<std::int64_t> runs;         ///< the runs its rows come from, ascending
  std::vector<std::string> fingerprints;  ///< distinct recorded fingerprints, most rows first
  std::string main_fingerprint;  ///< the one most of its rows have (ties: the newest run's)
};

/// Each method's runs and environments, from the rows shown and their runs' fingerprints.
std::map<std::string, MethodEnvironments> method_environments(
    const std::vector<store::Result>& results, const RunCalibrations& calibrations);

/// True when the row's run has a recorded fingerprint other than its method's main one.
bool from_other_environment(const store::Result& r,
                            const std::map<std::string, MethodEnvironments>& envs,
                            const RunCalibrations& calibrations);

/// True when a timed case of the row waits on the host inside, in the candidate's calls or in
/// its eager baseline's (timing flags waits_on_host, eager_waits_on_host), or the candidate's or
/// the baseline's calls waited on the GPU for their own launches (launch_gaps,
/// eager_launch_gaps): its speedup follows the host's speed, which two runs on one machine may
/// not share.
bool follows_host(const store::Result& r);

/// The calibration peak for a case's compute dtype ("float32" or "torch.float32" -> "fp32",
/// bfloat16 -> "bf16", float16 -> "fp16", int8 -> "int8"); "" when the dtype has none or is
/// unknown. float32 maps to fp32 even where the task allows TF32.
std::string peak_for_dtype(const std::string& dtype);

/// Achieved rates (for a case with a cost model and a candidate median) and, given peaks, the
/// roofline fraction: max(flops / compute peak, bytes / copy_bw) over the measured time.
CaseRoofline case_roofline(const store::CaseResult& c, const store::Calibration* calibration);

/// The best roofline fraction over a result's passed cases, if any has one.
std::optional<double> best_roofline(const store::Result& r, const store::Calibration* calibration);

/// Results as an aligned text table, one row per task, with a summary line per method and a
/// footer naming the calibration the "roofline" column (present when one exists) is against.
std::string results_table(const std::vector<store::Result>& results,
                          const RunCalibrations& calibrations = {});

/// Results as CSV, one row per job under a header row naming the columns (new columns are
/// added at the end); the roofline column is against each run's calibration, empty without one.
std::string results_csv(const std::vector<store::Result>& results,
                        const RunCalibrations& calibrations = {});

/// Results as a JSON document with a schema version, per-case details (achieved FLOP/s and
/// bytes/s, roofline fraction) and each run's fingerprint and calibration.
std::string results_json(const std::vector<store::Result>& results,
                         const RunCalibrations& calibrations = {});

/// A Markdown report: per-category pass rates and speedups, then per-task rows.
std::string results_markdown(const std::vector<store::Result>& results, const std::string& title,
                             const RunCalibrations& calibrations = {});

}  // namespace kbx::report
