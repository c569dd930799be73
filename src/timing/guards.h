#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kbx::timing {

/// A case timed faster than its roofline minimum by more than this factor is physically
/// impossible on the calibrated GPU (impossible_speed). The margin covers what a calibration
/// can miss: read-only streams run a few percent above the copy bandwidth it measures, and the
/// experts reach at most 101.6% of their roofline (H200, session 3).
inline constexpr double kFloorMargin = 1.10;

/// The least time a case can take on the calibrated GPU: its cost model's bytes at the copy
/// bandwidth, or its FLOPs at the fastest peak its compute dtype may use, whichever is longer.
struct RooflineFloor {
  double ms = 0;      ///< the roofline minimum, milliseconds
  std::string basis;  ///< "copy_bw", a peak's name, or "<peak>+copy_bw" when both were known
};

/// The peaks (of `kbx calibrate`) that FLOPs of a compute dtype may run at, for the floor: the
/// fastest legitimate rate, so that no honest kernel is below it. float32 may run on TF32 (or
/// emulate float32 with split tensor-core products, which is slower than TF32): fp32 and tf32;
/// bfloat16 and float16: bf16 and fp16; int8: int8. Other dtypes (float64, integers, unknown):
/// none, so bytes alone bound the case.
std::vector<std::string> floor_peaks_for_dtype(const std::string& dtype);

/// The roofline minimum of a case from its cost model and a calibration's peaks (copy_bw in
/// B/s; FLOP/s by name); nullopt when neither bytes nor FLOPs have a calibrated peak.
std::optional<RooflineFloor> roofline_floor(double flops, double bytes, const std::string& dtype,
                                            const std::map<std::string, double>& peaks);

/// True when a measured median (ms) is below the floor by more than `margin`
/// (measured * margin < floor).
bool below_floor(double measured_ms, const RooflineFloor& floor, double margin = kFloorMargin);

}  // namespace kbx::timing
