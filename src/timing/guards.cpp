#include "timing/guards.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "timing/stats.h"

namespace kbx::timing {

std::vector<std::string> floor_peaks_for_dtype(const std::string& dtype) {
  const std::string d = dtype.rfind("torch.", 0) == 0 ? dtype.substr(6) : dtype;
  if (d == "float32" || d == "float" || d == "fp32" || d == "f32") return {"fp32", "tf32"};
  if (d == "bfloat16" || d == "bf16" || d == "float16" || d == "half" || d == "fp16" ||
      d == "f16") {
    return {"bf16", "fp16"};
  }
  if (d == "int8" || d == "i8") return {"int8"};
  return {};
}

std::optional<RooflineFloor> roofline_floor(double flops, double bytes, const std::string& dtype,
                                            const std::map<std::string, double>& peaks) {
  auto peak = [&](const std::string& name) -> std::optional<double> {
    auto it = peaks.find(name);
    if (it == peaks.end() || !(it->second > 0)) return std::nullopt;
    return it->second;
  };
  std::optional<RooflineFloor> out;
  if (flops > 0) {
    double best = 0;
    std::string name;
    for (const auto& n : floor_peaks_for_dtype(dtype)) {
      if (auto p = peak(n); p && *p > best) best = *p, name = n;
    }
    if (best > 0) out = RooflineFloor{flops / best * 1e3, name};
  }
  if (bytes > 0) {
    if (auto bw = peak("copy_bw")) {
      const double ms = bytes / *bw * 1e3;
      if (!out) {
        out = RooflineFloor{ms, "copy_bw"};
      } else {
        out->ms = std::max(out->ms, ms);
        out->basis += "+copy_bw";
      }
    }
  }
  return out;
}

bool below_floor(double measured_ms, const RooflineFloor& floor, double margin) {
  return floor.ms > 0 && measured_ms * margin < floor.ms;
}

}  // namespace kbx::timing
