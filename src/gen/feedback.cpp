#include "gen/feedback.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/table.h"

namespace kbx::gen {

namespace {

/// The first case that did not pass, if any.
const store::CaseResult* first_failing(const store::Result& r) {
  for (const auto& c : r.cases) {
    if (c.status != "passed") return &c;
  }
  return nullptr;
}

/// At most `limit` bytes of a log: its head and its tail (where Python puts the error).
std::string clip(const std::string& text, std::size_t limit) {
  if (text.size() <= limit) return text;
  return text.substr(0, limit / 4) + "\n[... " + std::to_string(text.size() - limit) +
         " bytes cut ...]\n" + text.substr(text.size() - limit * 3 / 4);
}

void add_timing(const store::Result& r, const store::Calibration* calibration, std::string& out) {
  if (r.speedup) {
    out += fmt::format(
        "speedup over eager PyTorch: {:.2f}x (geometric mean over the performance "
        "cases)\n",
        *r.speedup);
  }
  if (r.kernel_share) {
    out += fmt::format("kernel share: {:.0f}% of the timed GPU work ran in your own kernels\n",
                       *r.kernel_share * 100);
  }
  if (auto roof = report::best_roofline(r, calibration)) {
    out += fmt::format("roofline: {:.0f}% of this GPU's bound (best case)\n", *roof * 100);
  }
}

}  // namespace

std::string outcome_status(const Outcome& o) {
  if (!o.request_error.empty()) return "request_failed";
  if (!o.no_candidate.empty()) return "no_code";
  return o.verdict ? o.verdict->status : "not_evaluated";
}

bool outcome_passed(const Outcome& o) {
  return o.verdict && o.verdict->status == "passed";
}

double outcome_rank(const Outcome& o) {
  if (!o.verdict) return o.no_candidate.empty() && o.request_error.empty() ? 0.5 : 0;
  if (outcome_passed(o)) return 3 + o.verdict->speedup.value_or(0);
  const int total = std::max(1, o.verdict->cases_total);
  return 1 + static_cast<double>(o.verdict->cases_passed) / total;
}

std::string verdict_text(const Outcome& o, const store::Calibration* calibration) {
  if (!o.request_error.empty()) return "status: request_failed (" + o.request_error + ")\n";
  if (!o.no_candidate.empty()) {
    return "status: no_code (your reply gave no kernel: " + o.no_candidate +
           "). Reply with the complete code in one ```python block.\n";
  }
  if (!o.verdict) return "status: not_evaluated\n";
  const store::Result& r = *o.verdict;
  std::string out =
      fmt::format("status: {} ({} of {} cases passed)\n", r.status, r.cases_passed, r.cases_total);
  const auto* c = first_failing(r);
  if (c) {
    out += fmt::format("first failing case: {} (tier {}): {}, error ratio {:.4g}", c->name, c->tier,
                       c->status, c->error_ratio);
    out += c->detail.empty() ? "\n" : "; " + c->detail + "\n";
  }
  const bool repeats_case = c && !c->detail.empty() &&
                            r.detail.find(c->detail) != std::string::npos &&
                            r.detail.size() < c->detail.size() + c->name.size() + 16;
  if (!r.detail.empty() && !repeats_case) out += "log:\n" + clip(r.detail, 4000) + "\n";
  add_timing(r, calibration, out);
  return out;
}

}  // namespace kbx::gen
