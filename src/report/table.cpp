#include "report/table.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "timing/stats.h"

namespace kbx::report {
namespace {

std::string opt(const std::optional<double>& v, const char* f = "{:.3f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : "-";
}

std::string ratio_text(double r) {
  if (std::isinf(r)) return "inf";
  return fmt::format("{:.3g}", r);
}

/// Largest roofline fraction proxy: achieved bytes/s over the run (GB/s), from the median time.
std::optional<double> best_gbps(const store::Result& r) {
  std::optional<double> best;
  for (const auto& c : r.cases) {
    if (c.bytes && c.cand_ms && *c.cand_ms > 0) {
      double gbps = *c.bytes / (*c.cand_ms * 1e-3) / 1e9;
      if (!best || gbps > *best) best = gbps;
    }
  }
  return best;
}

struct Summary {
  int total = 0, passed = 0;
  std::vector<double> speedups;
};

}  // namespace

std::string results_table(const std::vector<store::Result>& results) {
  std::string out = fmt::format("{:<10} {:<44} {:<20} {:>7} {:>9} {:>9} {:>10}\n", "method", "task",
                                "status", "cases", "err.ratio", "speedup", "best GB/s");
  std::map<std::string, Summary> per_method;
  for (const auto& r : results) {
    out +=
        fmt::format("{:<10} {:<44} {:<20} {:>7} {:>9} {:>9} {:>10}\n", r.method, r.task, r.status,
                    fmt::format("{}/{}", r.cases_passed, r.cases_total), ratio_text(r.error_ratio),
                    opt(r.speedup, "{:.2f}x"), opt(best_gbps(r), "{:.0f}"));
    auto& s = per_method[r.method];
    ++s.total;
    if (r.status == "passed") {
      ++s.passed;
      if (r.speedup) s.speedups.push_back(*r.speedup);
    }
  }
  for (const auto& [method, s] : per_method) {
    out += fmt::format("{}: {}/{} correct; geomean speedup over eager {} on {} timed tasks\n",
                       method, s.passed, s.total, opt(timing::geomean(s.speedups), "{:.2f}x"),
                       s.speedups.size());
  }
  return out;
}

std::string results_csv(const std::vector<store::Result>& results) {
  std::string out =
      "run_id,method,task,category,status,cases_passed,cases_total,error_ratio,speedup,"
      "triton_launches,wall_s,overhead_s\n";
  for (const auto& r : results) {
    std::string detail;
    out +=
        fmt::format("{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f}\n", r.run_id, r.method, r.task,
                    r.category, r.status, r.cases_passed, r.cases_total, ratio_text(r.error_ratio),
                    r.speedup ? fmt::format("{:.4f}", *r.speedup) : "", r.triton_launches, r.wall_s,
                    r.overhead_s);
  }
  return out;
}

std::string results_json(const std::vector<store::Result>& results) {
  nlohmann::json doc = {{"schema_version", 1}, {"results", nlohmann::json::array()}};
  for (const auto& r : results) {
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& c : r.cases) {
      nlohmann::json jc = {
          {"name", c.name},
          {"tier", c.tier},
          {"status", c.status},
          {"error_ratio",
           std::isinf(c.error_ratio) ? nlohmann::json("inf") : nlohmann::json(c.error_ratio)},
          {"detail", c.detail}};
      if (c.cand_ms) jc["candidate_ms"] = *c.cand_ms;
      if (c.eager_ms) jc["eager_ms"] = *c.eager_ms;
      for (const auto& [key, samples] :
           {std::pair{"candidate", &c.cand_samples}, std::pair{"eager", &c.eager_samples}}) {
        if (samples->empty()) continue;
        jc[std::string(key) + "_samples"] = samples->size();
        if (auto ci = timing::median_interval(*samples)) {
          jc[std::string(key) + "_ci95_ms"] = {ci->lo, ci->hi};
        }
      }
      if (c.flops) jc["flops"] = *c.flops;
      if (c.bytes) jc["bytes"] = *c.bytes;
      cases.push_back(jc);
    }
    nlohmann::json jr = {{"run_id", r.run_id},
                         {"method", r.method},
                         {"task", r.task},
                         {"category", r.category},
                         {"status", r.status},
                         {"detail", r.detail},
                         {"cases_passed", r.cases_passed},
                         {"cases_total", r.cases_total},
                         {"error_ratio", std::isinf(r.error_ratio) ? nlohmann::json("inf")
                                                                   : nlohmann::json(r.error_ratio)},
                         {"triton_launches", r.triton_launches},
                         {"wall_s", r.wall_s},
                         {"overhead_s", r.overhead_s},
                         {"cases", cases}};
    if (r.speedup) jr["speedup"] = *r.speedup;
    doc["results"].push_back(jr);
  }
  return doc.dump(2) + "\n";
}

std::string results_markdown(const std::vector<store::Result>& results, const std::string& title) {
  std::string out =
      "# " + title + "\n\n| category | tasks | correct | geomean speedup |\n|---|---|---|---|\n";
  std::map<std::string, Summary> per_cat;
  for (const auto& r : results) {
    auto& s = per_cat[r.category];
    ++s.total;
    if (r.status == "passed") {
      ++s.passed;
      if (r.speedup) s.speedups.push_back(*r.speedup);
    }
  }
  for (const auto& [cat, s] : per_cat) {
    out += fmt::format("| {} | {} | {} | {} |\n", cat, s.total, s.passed,
                       opt(timing::geomean(s.speedups), "{:.2f}x"));
  }
  out +=
      "\n| task | status | cases | error ratio | speedup | detail |\n|---|---|---|---|---|---|\n";
  for (const auto& r : results) {
    std::string detail = r.detail.substr(0, 160);
    for (auto& ch : detail) {
      if (ch == '|' || ch == '\n') ch = ' ';
    }
    out += fmt::format("| {} | {} | {}/{} | {} | {} | {} |\n", r.task, r.status, r.cases_passed,
                       r.cases_total, ratio_text(r.error_ratio), opt(r.speedup, "{:.2f}x"), detail);
  }
  return out;
}

}  // namespace kbx::report
