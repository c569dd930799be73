#pragma once
#include <functional>
#include <string>

#include "suite/task.h"
#include "verdict/status.h"
#include "verdict/tensor_file.h"

namespace kbx::verdict {

/// Outcome of comparing one output (or updated input) with the reference.
struct LeafVerdict {
  Status status = Status::Passed;
  double ratio = 0.0;        ///< error ratio (shadow model) or max violation (allclose)
  double max_abs_err = 0.0;  ///< max |candidate - shadow| over compared positions
  std::string detail;        ///< human-readable reason when not passed
};

/// Called between chunks of a comparison, on its threads: blocks while comparisons must leave
/// the CPUs alone (a timing slot holder's quiet host); empty: never blocks.
using Yield = std::function<void()>;

/// What a shadow tensor holds: the shadow's values, or their difference from the reference
/// (shadow - ref, stored in float32 for a float32 result: the reference worker's
/// shadow_minus_ref, listed in the case event's "shadow_minus_ref").
enum class ShadowForm { Values, MinusRef };

/// A floor under PyTorch's own error for a small result (the reference's "sensitivity"), in the
/// shadow model's normwise ratios: per element the smaller of how far the float64 result moves
/// when the inputs move by about one rounding and a few float32 ulps of the call on the inputs'
/// absolute values. docs/task-format.md says why both.
struct Sensitivity {
  double max_abs = 0;  ///< the largest floor of an element
  double rel_l2 = 0;   ///< the floors' L2 norm over the result's
};

/// Compares a candidate tensor with the reference at the task's dtype and, for the shadow
/// model, the float64 shadow (which may be null when the task has none: then allclose/exact).
/// `per_element` (special-value cases of elementwise tasks) adds the per-element rule of the
/// shadow model: each finite element against its own magnitude (docs/task-format.md).
/// `floor` raises the normwise allowances (not the per-element one) to the result's sensitivity.
LeafVerdict compare_leaf(const Tensor& cand, const Tensor& ref, const Tensor* shadow,
                         const suite::Contract& contract, bool per_element = false,
                         const Yield& yield = {}, ShadowForm form = ShadowForm::Values,
                         const Sensitivity& floor = {});

}  // namespace kbx::verdict
