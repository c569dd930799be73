#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace kbx::store {

/// The peaks `kbx calibrate` measured on one machine, stored in the `calibration` table.
struct Calibration {
  std::int64_t id = 0;
  std::string fingerprint;  ///< environment fingerprint (common/fingerprint.h) it was taken under
  std::string device;       ///< "cuda" or "cpu"
  std::string gpu;          ///< GPU model (the CPU's model on device cpu)
  std::string measured_at;  ///< UTC ISO-8601
  std::map<std::string, double> peaks;  ///< copy_bw in B/s; fp32, tf32, bf16, fp16, int8 in FLOP/s
  std::string environment_json;         ///< the worker's environment record and skipped peaks
};

/// Stores a calibration (measured_at defaults to now); returns its id.
std::int64_t save_calibration(Store& db, const Calibration& c);

/// The newest calibration taken under this environment fingerprint.
std::optional<Calibration> latest_calibration(Store& db, const std::string& fingerprint);

/// The newest calibration of this device kind and GPU model, whatever its software stack.
std::optional<Calibration> latest_calibration_for_gpu(Store& db, const std::string& device,
                                                      const std::string& gpu);

/// The newest calibration of this device kind on any machine (gen's prompts name its GPU and
/// peaks).
std::optional<Calibration> newest_calibration(Store& db, const std::string& device);

/// A run's environment fingerprint and the calibration its roofline fractions use.
struct RunCalibration {
  std::string fingerprint;                 ///< of the run's environment ("" when not recorded)
  std::optional<Calibration> calibration;  ///< none: the report has no roofline fractions
  std::string matched_by;                  ///< "fingerprint" or "gpu model"
};

/// The calibration for a run: the newest with the run's fingerprint, else the newest of the
/// same device and GPU model, else none.
RunCalibration calibration_for_run(Store& db, const Run& run);

/// The peaks the physical floor (timing/guards.h) takes for a run: each the highest that any
/// calibration matching the run measured (by its fingerprint, else by its device and GPU model),
/// not the newest one's. A peak read under dipping clocks is low (the H200's bf16 GEMM: 708 to
/// 783 TFLOP/s over six calibrations), and a low peak puts an honest kernel near
/// `impossible_speed`; a machine cannot do less than it once did. Empty: no calibration.
std::map<std::string, double> floor_peaks(Store& db, const Run& run);

/// A calibration from a calibrate worker's events (hello, gpu, peak, skipped, clocks_end). Throws
/// Error naming the missing event or field when the worker reported no peak.
Calibration calibration_from_events(const std::vector<nlohmann::json>& events,
                                    const std::string& device);

/// Adds the GPUs' clocks now as "clocks_end" to a run's environment, when it recorded
/// "clocks_start" (runs on a GPU with nvidia-smi at hand).
void record_end_clocks(Store& db, std::int64_t run_id);

}  // namespace kbx::store
