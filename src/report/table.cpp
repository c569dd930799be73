#include "report/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "timing/case_timing.h"
#include "timing/stats.h"

namespace kbx::report {
namespace {

/// Geometric mean over a job's timed cases of torch.compile's median over the candidate's.
std::optional<double> speedup_vs_compile(const store::Result& r) {
  std::vector<double> ratios;
  for (const auto& c : r.cases) {
    if (c.compile_ms && c.cand_ms && *c.cand_ms > 0) ratios.push_back(*c.compile_ms / *c.cand_ms);
  }
  return timing::geomean(ratios);
}

/// `v` formatted by `f`, or `none` when it has no value.
std::string opt(const std::optional<double>& v, const char* f = "{:.3f}", const char* none = "-") {
  return v ? fmt::format(fmt::runtime(f), *v) : none;
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

const store::Calibration* calibration_of(const RunCalibrations& cals, std::int64_t run_id) {
  auto it = cals.find(run_id);
  return it != cals.end() && it->second.calibration ? &*it->second.calibration : nullptr;
}

/// The runs of the results, in order of first appearance.
std::vector<std::int64_t> run_ids(const std::vector<store::Result>& results) {
  std::vector<std::int64_t> ids;
  for (const auto& r : results) {
    if (std::find(ids.begin(), ids.end(), r.run_id) == ids.end()) ids.push_back(r.run_id);
  }
  return ids;
}

bool any_calibrated(const std::vector<store::Result>& results, const RunCalibrations& cals) {
  for (auto id : run_ids(results)) {
    if (calibration_of(cals, id)) return true;
  }
  return false;
}

bool any_timed(const std::vector<store::Result>& results) {
  for (const auto& r : results) {
    for (const auto& c : r.cases) {
      if (c.cand_ms) return true;
    }
  }
  return false;
}

bool any_float32(const std::vector<store::Result>& results) {
  for (const auto& r : results) {
    for (const auto& c : r.cases) {
      if (c.cand_ms && peak_for_dtype(c.dtype) == "fp32") return true;
    }
  }
  return false;
}

std::string percent(const std::optional<double>& fraction) {
  return fraction ? fmt::format("{:.1f}%", *fraction * 100) : "-";
}

/// Which calibration each run's roofline fractions are against, one line per run; one line
/// saying how to get one when no run has any and something was timed.
std::vector<std::string> calibration_lines(const std::vector<store::Result>& results,
                                           const RunCalibrations& cals) {
  std::vector<std::string> lines;
  if (!any_calibrated(results, cals)) {
    if (any_timed(results)) lines.push_back("no calibration: run kbx calibrate");
    return lines;
  }
  for (auto id : run_ids(results)) {
    const auto* c = calibration_of(cals, id);
    if (!c) {
      lines.push_back(fmt::format("run {}: no calibration: run kbx calibrate", id));
      continue;
    }
    lines.push_back(
        fmt::format("run {}: roofline against calibration {} ({} {}, measured {}, "
                    "matched by {})",
                    id, c->id, c->device, c->gpu, c->measured_at, cals.at(id).matched_by));
  }
  if (any_float32(results)) {
    lines.push_back("float32 cases are held to the fp32 peak (TF32 is not assumed)");
  }
  return lines;
}

nlohmann::json calibration_json(const store::Calibration& c, const std::string& matched_by) {
  nlohmann::json peaks = nlohmann::json::object();
  for (const auto& [name, v] : c.peaks) peaks[name] = v;
  return {{"id", c.id},
          {"device", c.device},
          {"gpu", c.gpu},
          {"fingerprint", c.fingerprint},
          {"measured_at", c.measured_at},
          {"matched_by", matched_by},
          {"peaks", peaks}};
}

/// Each run of the results with its fingerprint and calibration (null when none).
nlohmann::json runs_json(const std::vector<store::Result>& results, const RunCalibrations& cals) {
  nlohmann::json runs = nlohmann::json::array();
  for (auto id : run_ids(results)) {
    nlohmann::json jr = {{"run_id", id}, {"fingerprint", nullptr}, {"calibration", nullptr}};
    if (auto it = cals.find(id); it != cals.end()) {
      if (!it->second.fingerprint.empty()) jr["fingerprint"] = it->second.fingerprint;
      if (it->second.calibration) {
        jr["calibration"] = calibration_json(*it->second.calibration, it->second.matched_by);
      }
    }
    runs.push_back(jr);
  }
  return runs;
}

void add_roofline(nlohmann::json& jc, const CaseRoofline& rl) {
  if (rl.achieved_flops) jc["achieved_flops"] = *rl.achieved_flops;
  if (rl.achieved_bytes_per_s) jc["achieved_bytes_per_s"] = *rl.achieved_bytes_per_s;
  if (rl.roofline_fraction) {
    jc["roofline_fraction"] = *rl.roofline_fraction;
    jc["roofline_peak"] = rl.basis;
  }
  if (!rl.note.empty()) jc["roofline_note"] = rl.note;
}

}  // namespace

std::string peak_for_dtype(const std::string& dtype) {
  std::string d = dtype.rfind("torch.", 0) == 0 ? dtype.substr(6) : dtype;
  if (d == "float32" || d == "float" || d == "fp32" || d == "f32") return "fp32";
  if (d == "bfloat16" || d == "bf16") return "bf16";
  if (d == "float16" || d == "half" || d == "fp16" || d == "f16") return "fp16";
  if (d == "int8" || d == "i8") return "int8";
  return "";
}

CaseRoofline case_roofline(const store::CaseResult& c, const store::Calibration* calibration) {
  CaseRoofline out;
  if (!c.cand_ms || *c.cand_ms <= 0) return out;
  const double seconds = *c.cand_ms * 1e-3;
  if (c.flops) out.achieved_flops = *c.flops / seconds;
  if (c.bytes) out.achieved_bytes_per_s = *c.bytes / seconds;
  if (!calibration) return out;
  auto peak = [&](const std::string& name) -> std::optional<double> {
    auto it = calibration->peaks.find(name);
    if (it == calibration->peaks.end() || !(it->second > 0)) return std::nullopt;
    return it->second;
  };
  std::optional<double> bound;  // the roofline time, seconds
  auto at_least = [&](double t) { bound = bound ? std::max(*bound, t) : t; };
  if (c.flops && *c.flops > 0) {
    const std::string name = peak_for_dtype(c.dtype);
    if (name.empty()) {
      out.note = (c.dtype.empty() ? "dtype unknown" : "no peak for " + c.dtype) + ": bytes only";
    } else if (auto p = peak(name)) {
      at_least(*c.flops / *p);
      out.peak = out.basis = name;
    } else {
      out.note = "peak " + name + " not calibrated: bytes only";
    }
  }
  if (c.bytes && *c.bytes > 0) {
    if (auto bw = peak("copy_bw")) {
      at_least(*c.bytes / *bw);
      out.basis += out.basis.empty() ? "copy_bw" : "+copy_bw";
    }
  }
  if (bound) out.roofline_fraction = *bound / seconds;
  return out;
}

std::optional<double> best_roofline(const store::Result& r, const store::Calibration* calibration) {
  std::optional<double> best;
  if (!calibration) return best;
  for (const auto& c : r.cases) {
    if (c.status != "passed") continue;
    const auto f = case_roofline(c, calibration).roofline_fraction;
    if (f && (!best || *f > *best)) best = f;
  }
  return best;
}

namespace {
/// A level's verdict in a table cell: pass, vals (failed a track rule only), fail.
std::string fingerprint_of(const RunCalibrations& cals, std::int64_t run_id) {
  auto it = cals.find(run_id);
  return it != cals.end() ? it->second.fingerprint : std::string();
}

/// The run column: the run id, with * when the row's environment is not its method's main one.
std::string run_mark(const store::Result& r, const std::map<std::string, MethodEnvironments>& envs,
                     const RunCalibrations& cals) {
  return fmt::format("{}{}", r.run_id, from_other_environment(r, envs, cals) ? "*" : "");
}

/// What a method's rows span: "from runs 1, 3" and, when several, the environments.
std::string provenance_line(const std::string& method, const MethodEnvironments& env) {
  std::string line = fmt::format("{}: newest verdict of each task, from run{} {}", method,
                                 env.runs.size() == 1 ? "" : "s", fmt::join(env.runs, ", "));
  if (env.fingerprints.size() > 1) {
    line += fmt::format(
        "; its rows span {} environments ({}): * marks a task whose verdict came from another "
        "environment than {}",
        env.fingerprints.size(), fmt::join(env.fingerprints, ", "), env.main_fingerprint);
  }
  return line;
}

/// The speedup as the tables show it: "~" after one that follows the host (follows_host).
std::string speedup_text(const store::Result& r) {
  if (!r.speedup) return "-";
  return fmt::format("{:.2f}x{}", *r.speedup, follows_host(r) ? "~" : "");
}

/// The legend of the "~" mark, when some row with a speedup has it; else "".
std::string follows_host_legend(const std::vector<store::Result>& results) {
  for (const auto& r : results) {
    if (r.speedup && follows_host(r)) {
      return "~ after a speedup: a timed call of the candidate or of its eager baseline waits on "
             "the host inside (timing flag waits_on_host), or the GPU waited for the candidate's "
             "or the eager baseline's own launches inside their calls (launch_gaps, "
             "eager_launch_gaps): that speedup follows the host's speed, "
             "and two timings of one code may differ by more than the others (23% on an H100, "
             "up to 57% on an H200's host in session 42)";
    }
  }
  return "";
}

std::string level_mark(const store::LevelVerdict& l) {
  if (l.status == "passed") return "pass";
  return l.values_ok ? "vals" : "fail";
}
}  // namespace

bool follows_host(const store::Result& r) {
  for (const auto& c : r.cases) {
    for (const char* flag :
         {"waits_on_host", "eager_waits_on_host", "launch_gaps", "eager_launch_gaps"}) {
      if (timing::has_flag(c.timing_flags, flag)) return true;
    }
  }
  return false;
}

std::map<std::string, MethodEnvironments> method_environments(
    const std::vector<store::Result>& results, const RunCalibrations& calibrations) {
  std::map<std::string, MethodEnvironments> out;
  std::map<std::string, std::map<std::string, std::pair<int, std::int64_t>>>
      counts;  // rows, newest
  for (const auto& r : results) {
    auto& env = out[r.method];
    ++env.tasks;
    if (std::find(env.runs.begin(), env.runs.end(), r.run_id) == env.runs.end()) {
      env.runs.insert(std::upper_bound(env.runs.begin(), env.runs.end(), r.run_id), r.run_id);
    }
    const std::string fp = fingerprint_of(calibrations, r.run_id);
    if (fp.empty()) continue;  // not recorded (an old run): neither marked nor counted
    auto& c = counts[r.method][fp];
    ++c.first;
    c.second = std::max(c.second, r.run_id);
  }
  for (auto& [method, env] : out) {
    std::vector<std::pair<std::string, std::pair<int, std::int64_t>>> ranked(counts[method].begin(),
                                                                             counts[method].end());
    std::sort(ranked.begin(), ranked.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [fp, c] : ranked) env.fingerprints.push_back(fp);
    if (!ranked.empty()) env.main_fingerprint = ranked.front().first;
  }
  return out;
}

bool from_other_environment(const store::Result& r,
                            const std::map<std::string, MethodEnvironments>& envs,
                            const RunCalibrations& calibrations) {
  auto it = envs.find(r.method);
  if (it == envs.end() || it->second.fingerprints.size() < 2) return false;
  const std::string fp = fingerprint_of(calibrations, r.run_id);
  return !fp.empty() && fp != it->second.main_fingerprint;
}

std::string results_table(const std::vector<store::Result>& results,
                          const RunCalibrations& calibrations) {
  const bool roofline = any_calibrated(results, calibrations);
  const auto envs = method_environments(results, calibrations);
  std::string out =
      fmt::format("{:<10} {:<44} {:>5} {:<20} {:>6} {:>6} {:>6} {:>7} {:>9} {:>9} {:>6} {:>10}",
                  "method", "task", "run", "status", "strict", "core", "kbx", "cases", "err.ratio",
                  "speedup", "glue", "best GB/s");
  out += roofline ? fmt::format(" {:>9}\n", "roofline") : "\n";
  std::map<std::string, Summary> per_method;
  std::map<std::string, std::array<int, 6>> per_level;  // passed and values-right per level
  for (const auto& r : results) {
    out +=
        fmt::format("{:<10} {:<44} {:>5} {:<20} {:>6} {:>6} {:>6} {:>7} {:>9} {:>9} {:>6} {:>10}",
                    r.method, r.task, run_mark(r, envs, calibrations), r.status,
                    level_mark(r.strict), level_mark(r.core), level_mark(r.kbx),
                    fmt::format("{}/{}", r.cases_passed, r.cases_total), ratio_text(r.error_ratio),
                    speedup_text(r), percent(r.glue_share), opt(best_gbps(r), "{:.0f}"));
    auto& lv = per_level[r.method];
    int i = 0;
    for (const auto* l : {&r.strict, &r.core, &r.kbx}) {
      lv[i] += l->status == "passed";
      lv[i + 3] += l->values_ok;
      ++i;
    }
    out += roofline ? fmt::format(" {:>9}\n",
                                  percent(best_roofline(r, calibration_of(calibrations, r.run_id))))
                    : "\n";
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
    const auto& lv = per_level[method];
    out += fmt::format(
        "{}: correct at strict {}, core {}, kbx {} of {}; values right (as under --track any) "
        "{}, {}, {}\n",
        method, lv[0], lv[1], lv[2], s.total, lv[3], lv[4], lv[5]);
    out += provenance_line(method, envs.at(method)) + "\n";
  }
  out += "levels: pass; vals = failed a track rule only (values right); fail\n";
  if (const auto legend = follows_host_legend(results); !legend.empty()) out += legend + "\n";
  for (const auto& line : calibration_lines(results, calibrations)) out += line + "\n";
  return out;
}

std::string results_csv(const std::vector<store::Result>& results,
                        const RunCalibrations& calibrations) {
  std::string out =
      "run_id,method,task,category,status,cases_passed,cases_total,error_ratio,speedup,"
      "triton_launches,wall_s,overhead_s,kernel_share,best_roofline_fraction,strict,core,kbx,"
      "strict_values_ok,core_values_ok,kbx_values_ok,glue_share,isolation,fingerprint,"
      "other_environment\n";
  const auto envs = method_environments(results, calibrations);
  for (const auto& r : results) {
    const auto roofline = best_roofline(r, calibration_of(calibrations, r.run_id));
    out +=
        fmt::format("{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f},{},{}", r.run_id, r.method, r.task,
                    r.category, r.status, r.cases_passed, r.cases_total, ratio_text(r.error_ratio),
                    opt(r.speedup, "{:.4f}", ""), r.triton_launches, r.wall_s, r.overhead_s,
                    opt(r.kernel_share, "{:.4f}", ""), opt(roofline, "{:.4f}", ""));
    out += fmt::format(",{},{},{},{:d},{:d},{:d},{},{},{},{:d}\n", r.strict.status, r.core.status,
                       r.kbx.status, r.strict.values_ok, r.core.values_ok, r.kbx.values_ok,
                       opt(r.glue_share, "{:.4f}", ""), r.isolation,
                       fingerprint_of(calibrations, r.run_id),
                       from_other_environment(r, envs, calibrations));
  }
  return out;
}

std::string results_json(const std::vector<store::Result>& results,
                         const RunCalibrations& calibrations) {
  const auto envs = method_environments(results, calibrations);
  nlohmann::json methods = nlohmann::json::object();
  for (const auto& [method, env] : envs) {
    methods[method] = {{"tasks", env.tasks},
                       {"runs", env.runs},
                       {"environments", env.fingerprints},
                       {"main_environment", env.main_fingerprint}};
  }
  nlohmann::json doc = {{"schema_version", 1},
                        {"runs", runs_json(results, calibrations)},
                        {"methods", methods},
                        {"results", nlohmann::json::array()}};
  for (const auto& r : results) {
    const store::Calibration* cal = calibration_of(calibrations, r.run_id);
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
      if (c.compile_ms) jc["compile_ms"] = *c.compile_ms;
      if (!c.timing_source.empty()) jc["timing_source"] = c.timing_source;
      if (c.cand_event_ms) jc["candidate_event_ms"] = *c.cand_event_ms;
      if (c.eager_event_ms) jc["eager_event_ms"] = *c.eager_event_ms;
      if (auto host = timing::median(c.cand_host_samples)) jc["candidate_host_ms"] = *host;
      if (c.kernel_share) jc["kernel_share"] = *c.kernel_share;
      if (c.glue_share) jc["glue_share"] = *c.glue_share;
      jc["in_kbx"] = c.in_kbx;
      jc["values_ok"] = c.values_ok;
      if (!c.timing_flags.empty()) jc["timing_flags"] = c.timing_flags;
      if (c.flops) jc["flops"] = *c.flops;
      if (c.bytes) jc["bytes"] = *c.bytes;
      if (!c.dtype.empty()) jc["dtype"] = c.dtype;
      add_roofline(jc, case_roofline(c, cal));
      cases.push_back(jc);
    }
    nlohmann::json jr = {{"run_id", r.run_id},
                         {"other_environment", from_other_environment(r, envs, calibrations)},
                         {"method", r.method},
                         {"task", r.task},
                         {"category", r.category},
                         {"status", r.status},
                         {"isolation", r.isolation},
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
    jr["follows_host"] = follows_host(r);
    if (auto vs = speedup_vs_compile(r)) jr["speedup_vs_compile"] = *vs;
    if (r.kernel_share) jr["kernel_share"] = *r.kernel_share;
    if (r.glue_share) jr["glue_share"] = *r.glue_share;
    for (const auto& [name, l] :
         {std::pair{"strict", &r.strict}, std::pair{"core", &r.core}, std::pair{"kbx", &r.kbx}}) {
      jr["levels"][name] = {{"status", l->status}, {"values_ok", l->values_ok}};
    }
    if (auto best = best_roofline(r, cal)) jr["best_roofline_fraction"] = *best;
    doc["results"].push_back(jr);
  }
  return doc.dump(2) + "\n";
}

std::string results_markdown(const std::vector<store::Result>& results, const std::string& title,
                             const RunCalibrations& calibrations) {
  const bool roofline = any_calibrated(results, calibrations);
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
  const auto envs = method_environments(results, calibrations);
  out += "\n";
  for (const auto& [method, env] : envs) out += provenance_line(method, env) + "  \n";
  out += roofline
             ? "\n| task | run | status | cases | error ratio | speedup | roofline | detail |\n"
               "|---|---|---|---|---|---|---|---|\n"
             : "\n| task | run | status | cases | error ratio | speedup | detail |\n"
               "|---|---|---|---|---|---|---|\n";
  for (const auto& r : results) {
    std::string detail = r.detail.substr(0, 160);
    for (auto& ch : detail) {
      if (ch == '|' || ch == '\n') ch = ' ';
    }
    const std::string rl =
        roofline ? percent(best_roofline(r, calibration_of(calibrations, r.run_id))) + " | " : "";
    out += fmt::format("| {} | {} | {} | {}/{} | {} | {} | {}{} |\n", r.task,
                       run_mark(r, envs, calibrations), r.status, r.cases_passed, r.cases_total,
                       ratio_text(r.error_ratio), speedup_text(r), rl, detail);
  }
  if (const auto legend = follows_host_legend(results); !legend.empty()) {
    out += "\n" + legend + "\n";
  }
  const auto lines = calibration_lines(results, calibrations);
  if (!lines.empty()) out += "\n";
  for (const auto& line : lines) out += line + "  \n";
  return out;
}

}  // namespace kbx::report
