#pragma once
#include <optional>
#include <string>

#include "store/calibration.h"
#include "store/store.h"

namespace kbx::gen {

/// What refinement knows of one attempt: its verdict from kbx, or why there was no candidate.
struct Outcome {
  std::optional<store::Result> verdict;  ///< the candidate's newest verdict, when judged
  std::string no_candidate;              ///< why the reply gave no candidate ("" when it did)
  std::string request_error;             ///< why the request got no reply ("" when it did)
};

/// The outcome's status: the verdict's status, "no_code", "request_failed" or "not_evaluated".
std::string outcome_status(const Outcome& o);

/// True when the candidate passed.
bool outcome_passed(const Outcome& o);

/// A number that orders outcomes, higher is better: passed (by speedup) above failed (by the
/// share of cases passed) above no candidate.
double outcome_rank(const Outcome& o);

/// The verdict as the reflection message states it ({{verdict}}): the status, the cases passed,
/// the first failing case with its error figures (error ratio and the comparison's detail: max
/// abs/rel error, mismatched elements), the compile or error log, the speedup over eager, the
/// kernel share and the roofline fraction (against the calibration, when there is one).
std::string verdict_text(const Outcome& o, const store::Calibration* calibration);

}  // namespace kbx::gen
