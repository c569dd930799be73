#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "suite/task.h"
#include "verdict/compare.h"

namespace kbx::verdict {

/// Files and metadata of one case: the reference side (from the reference worker) and the
/// candidate side (from the candidate's worker). Paths are <base>.<role>.kbt.
struct CaseFiles {
  std::filesystem::path ref_base;      ///< .ref .ref_after .shadow .shadow_after
  std::filesystem::path cand_base;     ///< .cand .cand_after
  nlohmann::json ref_event;            ///< the reference worker's "case" event
  nlohmann::json cand_event;           ///< the candidate worker's "case" event
  std::filesystem::path in_base = {};  ///< .in (the inputs' own folder); empty: ref_base
};

/// Judgement of one case.
struct CaseVerdict {
  Status status = Status::Passed;
  double ratio = 0.0;  ///< the worst error ratio over outputs and updated inputs
  std::string detail;
};

/// Judges a case: output structure and kinds, every output leaf, and every input tensor
/// (updated like the reference's, or left bit-identical; where the reference kept no inputs
/// file, its event's `in_file` false, any input the candidate's worker reports changed is a
/// mutation). For a random case only shapes and
/// dtypes of outputs are compared here; the task's judge() decides the values. `yield` is
/// called between chunks of the comparisons (compare_leaf).
CaseVerdict judge_case(const CaseFiles& files, const suite::Contract& contract,
                       const std::string& device, bool random = false, const Yield& yield = {});

/// The verdict of a fresh twin (a timed case's call on fresh values written into the tensors it
/// was timed on) that failed while its base case passed. `twin_on_base` names the twin's outputs
/// with the base case's reference files and event: when they pass there, the twin returned the
/// answer to the values before the write (a result kept across calls) and the verdict is
/// stale_result; otherwise it is the twin's own failure (an honest kernel whose error on other
/// values of the same shapes exceeds its allowance is not accused of caching).
CaseVerdict fresh_twin_verdict(const CaseVerdict& twin, const std::string& base,
                               const CaseFiles& twin_on_base, const suite::Contract& contract,
                               const std::string& device, const Yield& yield = {});

/// The reference's outputs of a case, leaves returned as an updated input included.
TensorFile reference_outputs(const CaseFiles& files);

/// Judges a synthesized candidate (all-zeros or first-input outputs) for `kbx suite check`;
/// `outputs` replaces the candidate's output file, inputs are taken as unchanged.
CaseVerdict judge_synthetic(const CaseFiles& files, const TensorFile& outputs,
                            const suite::Contract& contract);

}  // namespace kbx::verdict
