#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace kbx {

/// What makes two runs' timings comparable: the GPUs, their driver and the software stack. (The
/// host's CPU and speed are recorded in a run's environment beside it, not part of it.)
struct FingerprintFields {
  std::string gpu;  ///< GPU model ("" without a GPU)
  int gpu_count = 0;
  std::string driver;
  std::string cuda;
  std::string torch;
  std::string triton;
};

/// The fields from an environment record (a worker's hello event, a run's environment or a
/// calibration's): keys gpu, gpu_count, driver, cuda, torch, triton; absent or null ones are "".
FingerprintFields fingerprint_fields(const nlohmann::json& environment);

/// A stable 16-hex-digit hash of the fields; any change of any field changes it.
std::string fingerprint(const FingerprintFields& fields);

/// The SM and memory clocks (MHz) of each GPU as [{"sm": n, "mem": n}] from nvidia-smi's
/// `--query-gpu=clocks.sm,clocks.mem --format=csv,noheader,nounits` output; null when empty.
nlohmann::json parse_gpu_clocks(const std::string& nvidia_smi_output);

/// The clocks now, by running nvidia-smi; null when it is not on PATH or fails.
nlohmann::json gpu_clocks();

}  // namespace kbx
