#include "sched/evaluate.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "common/error.h"
#include "common/util.h"
#include "kbx/probe_records.h"
#include "sched/events.h"
#include "timing/probe_timing.h"
#include "timing/stats.h"
#include "verdict/case_judge.h"
#include "verdict/tensor_file.h"

namespace kbx::sched {
namespace fs = std::filesystem;
using nlohmann::json;
using verdict::Status;

namespace {

std::string status_str(Status s) {
  return verdict::status_name(s);
}

Status status_of_error(const ErrorEvent& err) {
  const std::string& kind = err.kind;
  const std::string& phase = err.phase;
  if (kind == "compile_error") return Status::CompileError;
  if (kind == "oom") return Status::Oom;
  if (kind == "cuda_error") return Status::CudaError;
  if (phase == "import") return Status::ImportError;
  return Status::RuntimeError;
}

/// The process-level outcome as a status, when it is a failure (else Passed).
std::pair<Status, std::string> process_failure(const sandbox::Outcome& o) {
  using End = sandbox::Outcome::End;
  if (o.end == End::TimedOut) return {Status::Timeout, o.describe() + "; process group killed"};
  if (o.end == End::SpawnFailed) return {Status::HarnessError, "could not start the worker"};
  if (o.end == End::Signaled) return {Status::Crash, "killed by " + o.describe()};
  if (!o.protocol_error.empty()) return {Status::Crash, o.protocol_error};
  if (first_event(o, "done").is_null()) {
    return {Status::Crash, fmt::format("worker ended ({}) before finishing: os._exit, a fatal "
                                       "error or an interpreter crash",
                                       o.describe())};
  }
  return {Status::Passed, ""};
}

/// True when some output of the reference case has at least one element (an empty case may
/// rightly launch nothing).
bool has_elements(const json& ref_case) {
  for (const auto& out : ref_case.value("outputs", json::array())) {
    std::int64_t n = 1;
    for (const auto& d : out.value("shape", json::array())) n *= d.get<std::int64_t>();
    if (n > 0) return true;
  }
  return false;
}

std::string tail(const std::string& s, size_t n) {
  return s.size() > n ? s.substr(s.size() - n) : s;
}

json build_request(const WorkerEnv& env, const JobSettings& st, const suite::Task& task,
                   const ReferenceCases& ref, const fs::path& source_path,
                   const fs::path& job_dir) {
  json cases = json::array();
  for (const auto& ev : ref.cases) {
    const std::string name = ev.value("case", "");
    json c = {{"name", name},
              {"tier", ev.value("tier", "")},
              {"inputs", fs::absolute(ref.dir / (name + ".in.kbt")).string()},
              {"call", ev.at("call")},
              {"out_prefix", fs::absolute(job_dir / name).string()}};
    if (ev.contains("fresh_of")) c["fresh_of"] = ev["fresh_of"];
    if (ev.contains("digest") && ev.contains("case_seed")) {  // lets the worker rebuild inputs
      c["digest"] = ev["digest"];
      c["case_seed"] = ev["case_seed"];
    }
    if (ev.value("random", false)) {
      c["random"] = true;
      const std::uint64_t base = ev.value("case_seed", std::uint64_t{0}) ^ st.seed;
      c["torch_seeds"] = {base & 0xFFFFFFFFFFFFULL, (base + 0x9E3779B9ULL) & 0xFFFFFFFFFFFFULL};
    }
    cases.push_back(c);
  }
  return {{"mode", "candidate"},
          {"device", env.device},
          {"candidate", fs::absolute(source_path).string()},
          {"entry", task.entry},
          {"task_dir", fs::absolute(task.dir).string()},
          {"tf32", task.contract.tf32},
          {"track", st.track},
          {"cases", cases},
          {"time", st.time && env.device == "cuda"}};
}

/// Runs the task's judge() in a separate process over the random cases of a job.
std::map<std::string, json> judge_random(const WorkerEnv& env, const suite::Task& task,
                                         const ReferenceCases& ref,
                                         const std::map<std::string, json>& cand_cases,
                                         const fs::path& job_dir) {
  json jobs = json::array();
  for (const auto& ev : ref.cases) {
    const std::string name = ev.value("case", "");
    if (!ev.value("random", false) || !cand_cases.count(name)) continue;
    jobs.push_back({{"case", name},
                    {"task_dir", fs::absolute(task.dir).string()},
                    {"entry", task.entry},
                    {"inputs", fs::absolute(ref.dir / (name + ".in.kbt")).string()},
                    {"call", ev.at("call")},
                    {"structure", cand_cases.at(name).value("structure", "single")},
                    {"out_a", fs::absolute(job_dir / (name + ".cand.kbt")).string()},
                    {"out_b", fs::absolute(job_dir / (name + ".cand2.kbt")).string()}});
  }
  std::map<std::string, json> verdicts;
  if (jobs.empty()) return verdicts;
  WorkerEnv judge_env = env;
  judge_env.isolate_network = false;
  judge_env.launcher = nullptr;  // the judge is trusted code in a process of its own
  judge_env.probe_lib.clear();
  auto o = run_worker(judge_env, {{"mode", "judge"}, {"device", env.device}, {"jobs", jobs}},
                      job_dir / "judge");
  for (const auto& e : o.events) {
    if (e.value("ev", "") == "judged") verdicts[e.value("case", "")] = e;
  }
  return verdicts;
}

/// A static fact that decides the job without running anything, if any.
std::optional<std::pair<Status, std::string>> static_failure(
    const std::optional<StaticEvent>& facts, const suite::Task& task, const std::string& track) {
  if (!facts) return std::nullopt;
  if (!facts->syntax_ok) return std::pair{Status::SyntaxError, facts->message};
  if (!facts->entry_found) {
    return std::pair{Status::NoEntry, "no function " + task.entry + "() defined at module level"};
  }
  if (track == "triton" && facts->triton_kernels.empty()) {
    return std::pair{Status::StaticReject,
                     std::string("track triton: no @triton.jit kernel in the source (use --track "
                                 "any to accept other implementations)")};
  }
  return std::nullopt;
}

/// What the candidate's worker reported: its cases, timings, launches and own time, from its
/// events parsed with every field required (sched/events.h).
struct WorkerReport {
  std::map<std::string, json> cases;  ///< each case's event as sent (validated)
  std::map<std::string, std::vector<double>> ms;
  std::map<std::string, std::vector<std::uint64_t>> probe_ids;  ///< per timed case
  std::map<std::string, std::vector<double>> host_ms;  ///< per timed case: host time per call
  std::set<std::string> tampered;                      ///< timing functions the candidate replaced
  double own_seconds = 0;  ///< import, first calls and timed work: not harness overhead
  double io_seconds = 0;   ///< reading inputs and saving results: harness overhead
  int inputs_rebuilt = 0;  ///< cases whose inputs the worker rebuilt instead of reading
  std::int64_t triton_launches = 0;
  std::optional<StaticEvent> static_facts;
  std::optional<ErrorEvent> error;
  std::string protocol_problem;  ///< the first event that broke the protocol, if any
};

WorkerReport collect(const sandbox::Outcome& o) {
  WorkerReport w;
  CandidateEvents ev = parse_candidate_events(o.events);
  w.protocol_problem = std::move(ev.problem);
  w.static_facts = std::move(ev.static_facts);
  w.error = std::move(ev.error);
  if (ev.imported) w.own_seconds += ev.imported->seconds;
  for (auto& c : ev.cases) {
    w.own_seconds += c.call_s;
    w.io_seconds += c.read_s + c.save_s;
    w.inputs_rebuilt += c.inputs_from == "rebuilt" ? 1 : 0;
    w.triton_launches += c.triton_launches;
    w.cases[c.name] = std::move(c.raw);
  }
  for (auto& t : ev.timings) {
    w.ms[t.name] = std::move(t.ms);
    w.probe_ids[t.name] = std::move(t.probe_ids);
    w.host_ms[t.name] = std::move(t.host_ms);
    w.tampered.insert(t.tampered.begin(), t.tampered.end());
    w.own_seconds += t.seconds;
  }
  return w;
}

/// The C++ comparison of one case's outputs with the reference's.
verdict::CaseVerdict compare_case(const json& ref_ev, const json& cand_ev,
                                  const ReferenceCases& ref, const fs::path& job_dir,
                                  const suite::Task& task, const std::string& device) {
  const std::string name = ref_ev.value("case", "");
  try {
    return verdict::judge_case({ref.dir / name, job_dir / name, ref_ev, cand_ev}, task.contract,
                               device, ref_ev.value("random", false));
  } catch (const verdict::BadTensorFile& bad) {
    // A file in the job's folder is the candidate's to spoil (a FIFO, symlink or truncated file in
    // place of its outputs): a violation. Anywhere else it is kbx's own fault.
    const auto rel = bad.path.lexically_normal().lexically_relative(job_dir.lexically_normal());
    const bool candidates = !rel.empty() && rel.begin()->string() != "..";
    verdict::CaseVerdict v;
    v.status = candidates ? Status::OutputViolation : Status::HarnessError;
    v.detail = bad.what();
    return v;
  } catch (const std::exception& ex) {
    verdict::CaseVerdict v;
    v.status = Status::HarnessError;
    v.detail = ex.what();
    return v;
  }
}

/// Comparisons made while the worker was still running, by case: the worker's report of the
/// case as it was compared, and the comparison.
using EarlyComparisons = std::map<std::string, std::pair<json, verdict::CaseVerdict>>;

/// A worker event handler that compares each judged case as soon as the worker reports it, so
/// that comparing overlaps the worker's later cases and timing. Random cases wait for their
/// judge process.
std::function<void(const json&)> compare_early(const ReferenceCases& ref, const fs::path& job_dir,
                                               const suite::Task& task, const std::string& device,
                                               EarlyComparisons& early) {
  return [&ref, job_dir, &task, device, &early](const json& e) {
    if (e.value("ev", "") != "case") return;
    const std::string name = e.value("case", "");
    if (early.count(name)) return;
    for (const auto& ref_ev : ref.cases) {
      if (ref_ev.value("case", "") != name) continue;
      if (!ref_ev.value("random", false)) {
        early.emplace(name, std::pair{e, compare_case(ref_ev, e, ref, job_dir, task, device)});
      }
      return;
    }
  };
}

/// The verdict of one case: the C++ comparison (made early when the worker's report of the case
/// is the one compared then), then the random contract, then the track rule.
verdict::CaseVerdict judge_one(const json& ref_ev, const json& cand_ev, const ReferenceCases& ref,
                               const fs::path& job_dir, const suite::Task& task,
                               const WorkerEnv& env, const JobSettings& st,
                               const std::map<std::string, json>& random_verdicts,
                               const EarlyComparisons& early) {
  const std::string name = ref_ev.value("case", "");
  const bool random = ref_ev.value("random", false);
  const auto made = early.find(name);
  verdict::CaseVerdict v = made != early.end() && made->second.first == cand_ev
                               ? made->second.second
                               : compare_case(ref_ev, cand_ev, ref, job_dir, task, env.device);
  if (v.status == Status::Passed && random) {
    auto jv = random_verdicts.find(name);
    if (jv == random_verdicts.end() || !jv->second.value("ok", false)) {
      v.status = Status::RandomContract;
      v.detail =
          jv == random_verdicts.end() ? "judge gave no verdict" : jv->second.value("message", "");
    }
  }
  if (v.status == Status::Passed && st.track == "triton" &&
      cand_ev.value("triton_launches", 0) == 0 && has_elements(ref_ev)) {
    v.status = Status::NoTritonLaunch;
    v.detail =
        "the call launched no Triton kernel (track triton needs the candidate's own kernels to "
        "do the work)";
  }
  return v;
}

/// The candidate worker's probe records, parsed once per job.
struct ProbeData {
  bool expected = false;                     ///< the worker ran under the probe
  bool ok = false;                           ///< a valid stream with a header came back
  std::string problem;                       ///< why not, when expected and not ok
  bool harness_problem = false;              ///< the probe failed on its own: events time the job
  std::optional<timing::CallRecords> index;  ///< the records by call, when ok
  std::vector<std::string> triton_functions;
};

ProbeData read_probe(const sandbox::Outcome& o, const WorkerEnv& env, const json& facts) {
  ProbeData p;
  p.expected = env.device != "cpu" && !env.probe_lib.empty();
  if (!p.expected) return p;
  for (const auto& k : facts.value("triton_kernels", json::array())) {
    if (k.is_string()) p.triton_functions.push_back(k.get<std::string>());
  }
  std::string error;
  std::vector<probe::Record> records;
  if (o.probe_bytes.empty()) {
    // CUDA, and with it the probe, starts before the candidate's code runs; a silent probe is
    // this machine's problem (CUPTI busy, library not loadable), not the candidate's.
    p.harness_problem = true;
    p.problem = "the probe wrote nothing (CUPTI did not start in the worker; see docs/probe.md)";
  } else if (!probe_records(o, &records, &error)) {
    p.problem = "the probe's stream is invalid: " + error;
  } else {
    p.ok = true;
    p.index.emplace(records);
  }
  return p;
}

/// Appends a flag to a comma-separated list of flags.
void add_flag(std::string& flags, const std::string& flag) {
  flags += (flags.empty() ? "" : ",") + flag;
}

/// Timing of a case from the probe's records, events kept as the cross-check; returns the
/// violation it shows, if any.
std::optional<std::pair<Status, std::string>> fill_probe_timing(store::CaseResult& cr,
                                                                const ProbeData& p,
                                                                const WorkerReport& w,
                                                                const std::string& track) {
  auto ids = w.probe_ids.find(cr.name);
  if (!p.ok && p.harness_problem) {  // this machine's probe failed: time by events, say so
    add_flag(cr.timing_flags, "probe_silent");
    return std::nullopt;
  }
  if (!p.ok) return std::pair{Status::TimingMismatch, p.problem};
  if (ids == w.probe_ids.end() || ids->second.empty()) {
    return std::pair{Status::TimingMismatch, "the timed calls were not marked for the probe"};
  }
  const timing::ProbeTimes t = timing::analyze_calls(*p.index, ids->second, p.triton_functions);
  cr.cand_event_samples = cr.cand_samples;
  cr.cand_event_ms = cr.cand_ms;
  cr.cand_samples = t.span_ms;
  cr.cand_ms = timing::median(cr.cand_samples);
  cr.timing_source = "probe";
  cr.kernel_share = t.kernel_share;
  if (t.calls_without_work) add_flag(cr.timing_flags, "calls_without_gpu_work");
  if (t.unattributed_records) {
    add_flag(cr.timing_flags, "unattributed_work");
    return std::pair{Status::UnattributedWork,
                     fmt::format("{} GPU records not launched by the timed call ran inside it "
                                 "(e.g. {})",
                                 t.unattributed_records, t.unattributed_example)};
  }
  const auto host_median = timing::median(cr.cand_host_samples);
  if (host_median && cr.cand_ms && *host_median > *cr.cand_ms) {
    add_flag(cr.timing_flags, "host_bound");  // launching a call takes longer than running it
  }
  if (timing::mostly_uploads(t, ids->second.size())) {
    add_flag(cr.timing_flags, "host_work");
    return std::pair{
        Status::UnattributedWork,
        fmt::format("the timed calls' GPU work was mostly copies from host memory "
                    "({:.1f} MiB per call, {:.3f} ms of uploads against {:.3f} ms in "
                    "the candidate's kernels): the result was computed on the CPU, "
                    "which the GPU clock does not see",
                    static_cast<double>(t.upload_bytes) / ids->second.size() / (1 << 20),
                    static_cast<double>(t.upload_ns) * 1e-6,
                    static_cast<double>(t.candidate_ns) * 1e-6)};
  }
  if (t.escaped_records) {
    add_flag(cr.timing_flags, "escaped_work");
    return std::pair{Status::TimingMismatch,
                     fmt::format("{} GPU records of the timed calls were still running after the "
                                 "call had ended on its stream (work on a stream that was not "
                                 "waited for, e.g. {})",
                                 t.escaped_records, t.escaped_example)};
  }
  if (track == "triton" && t.kernel_share && *t.kernel_share < 0.5) {
    add_flag(cr.timing_flags, "fallback");
    return std::pair{Status::Fallback,
                     fmt::format("{:.0f}% of the timed calls' kernel time was in library kernels, "
                                 "not the candidate's own",
                                 100 * (1 - *t.kernel_share))};
  }
  if (cr.cand_ms && cr.cand_event_ms && timing::events_disagree(*cr.cand_event_ms, *cr.cand_ms)) {
    add_flag(cr.timing_flags, "events_disagree");
    return std::pair{
        Status::TimingMismatch,
        fmt::format("CUDA events say {:.4f} ms per call, the probe's records {:.4f} ms "
                    "(work outside the timed stream, or a patched timer)",
                    *cr.cand_event_ms, *cr.cand_ms)};
  }
  return std::nullopt;
}

/// The dtype a case computes in, for picking its roofline peak: the one its cost model names
/// (`cost()["compute"]`), else the first floating-point output's, else the first output's (""
/// when it returns no tensor).
std::string compute_dtype(const json& ref_ev) {
  if (ref_ev.contains("cost") && ref_ev["cost"].contains("compute")) {
    return ref_ev["cost"].value("compute", "");
  }
  std::string first;
  for (const auto& leaf : ref_ev.value("outputs", json::array())) {
    const std::string d = leaf.value("dtype", "");
    if (d.empty()) continue;
    if (first.empty()) first = d;
    if (d.find("float") != std::string::npos) return d;
  }
  return first;
}

/// Eager over candidate medians from one clock (timing::same_clock_speedup); flags a case
/// whose candidate the probe timed while eager had only events.
std::optional<double> same_clock_speedup(store::CaseResult& cr) {
  static const std::vector<double> none;
  const bool eager_by_probe = !cr.eager_event_samples.empty();
  const bool cand_by_probe = cr.timing_source == "probe";
  if (cand_by_probe && !eager_by_probe) add_flag(cr.timing_flags, "eager_not_probe_timed");
  return timing::same_clock_speedup(eager_by_probe ? cr.eager_samples : none,
                                    eager_by_probe ? cr.eager_event_samples : cr.eager_samples,
                                    cand_by_probe ? cr.cand_samples : none,
                                    cand_by_probe ? cr.cand_event_samples : cr.cand_samples);
}

/// Cost model, dtype and timing samples of a case (CUDA events for the candidate; the probe's
/// spans replace them in fill_probe_timing).
void fill_timing(store::CaseResult& cr, const json& ref_ev, const WorkerReport& w) {
  if (ref_ev.contains("cost")) {
    cr.flops = ref_ev["cost"].value("flops", 0.0);
    cr.bytes = ref_ev["cost"].value("bytes", 0.0);
  }
  cr.dtype = compute_dtype(ref_ev);
  cr.eager_samples = ref_ev.value("eager_ms", std::vector<double>{});
  if (ref_ev.contains("eager_probe_ms")) {  // the reference worker ran under the probe too
    cr.eager_event_samples = cr.eager_samples;
    cr.eager_event_ms = timing::median(cr.eager_event_samples);
    cr.eager_samples = ref_ev.value("eager_probe_ms", std::vector<double>{});
  }
  cr.eager_ms = timing::median(cr.eager_samples);
  cr.compile_samples = compile_samples(ref_ev);
  cr.compile_ms = timing::median(cr.compile_samples);
  auto it = w.ms.find(cr.name);
  if (it == w.ms.end()) return;
  cr.cand_samples = it->second;
  cr.cand_ms = timing::median(cr.cand_samples);
  if (cr.timing_source.empty()) cr.timing_source = "events";
  if (auto host = w.host_ms.find(cr.name); host != w.host_ms.end()) {
    cr.cand_host_samples = host->second;
  }
}

}  // namespace

store::Result evaluate(const WorkerEnv& env, const JobSettings& st, const suite::Task& task,
                       const store::Candidate& cand, const ReferenceCases& ref,
                       const fs::path& job_dir) {
  store::Result r;
  r.candidate_id = cand.id;
  r.method = cand.method;
  r.task = task.id();
  r.category = task.category;
  r.cases_total = static_cast<int>(ref.cases.size());
  const double t0 = monotonic_seconds();
  auto finish = [&](Status s, std::string detail) {
    r.status = status_str(s);
    r.detail = std::move(detail);
    r.wall_s = monotonic_seconds() - t0;
    return r;
  };
  if (!ref.error.empty()) return finish(Status::ReferenceError, ref.error);
  if (!is_valid_utf8(cand.source)) {
    return finish(Status::BadInput, cand.origin + ": source is not valid UTF-8");
  }
  if (cand.source.find_first_not_of(" \t\r\n") == std::string::npos) {
    return finish(Status::BadInput, cand.origin + ": source is empty");
  }
  fs::remove_all(job_dir);
  fs::create_directories(job_dir);
  const fs::path source_path = job_dir / (task.name + ".py");
  write_file(source_path, cand.source);

  const json request = build_request(env, st, task, ref, source_path, job_dir);
  const double t_spawn = monotonic_seconds();
  EarlyComparisons early;
  sandbox::Outcome o =
      run_worker(env, request, job_dir, compare_early(ref, job_dir, task, env.device, early));
  const double t_worker = monotonic_seconds() - t_spawn;
  r.stdout_bytes = o.stdout_bytes + o.stderr_bytes;
  const WorkerReport w = collect(o);
  if (!w.protocol_problem.empty()) {  // the candidate's process wrote the stream
    if (!st.keep_files) fs::remove_all(job_dir);
    return finish(Status::Crash, "protocol error in the worker's events: " + w.protocol_problem);
  }
  if (auto fail = static_failure(w.static_facts, task, st.track)) {
    return finish(fail->first, fail->second);
  }

  const double t_probe = monotonic_seconds();
  const ProbeData probe = read_probe(o, env, first_event(o, "static"));
  double probe_s = monotonic_seconds() - t_probe;
  double compare_s = 0;
  r.triton_launches = static_cast<int>(w.triton_launches);
  const auto random_verdicts = judge_random(env, task, ref, w.cases, job_dir);
  Status first_fail = Status::Passed;
  std::string first_detail;
  std::vector<double> speedups;
  for (const auto& ev : ref.cases) {
    store::CaseResult cr;
    cr.name = ev.value("case", "");
    cr.tier = ev.value("tier", "");
    auto it = w.cases.find(cr.name);
    if (it == w.cases.end()) continue;
    const double t_compare = monotonic_seconds();
    auto v = judge_one(ev, it->second, ref, job_dir, task, env, st, random_verdicts, early);
    compare_s += monotonic_seconds() - t_compare;
    if (v.status != Status::Passed && ev.contains("fresh_of")) {
      v.detail = fmt::format(
          "after timing, on fresh values written into the tensors it was timed "
          "on, the result is wrong (a result cached across calls?): {}",
          v.detail);
      v.status = Status::StaleResult;
    }
    cr.status = status_str(v.status);
    cr.error_ratio = v.ratio;
    cr.detail = v.detail;
    r.error_ratio = std::max(r.error_ratio, v.ratio);
    if (v.status == Status::Passed) {
      ++r.cases_passed;
    } else if (first_fail == Status::Passed) {
      first_fail = v.status;
      first_detail = "case " + cr.name + ": " + v.detail;
    }
    fill_timing(cr, ev, w);
    if (w.ms.count(cr.name) && probe.expected && v.status == Status::Passed) {
      const double t_analyze = monotonic_seconds();
      auto bad = fill_probe_timing(cr, probe, w, st.track);
      probe_s += monotonic_seconds() - t_analyze;
      if (bad) {
        cr.status = status_str(bad->first);
        cr.detail = bad->second;
        if (first_fail == Status::Passed) {
          first_fail = bad->first;
          first_detail = "case " + cr.name + ": " + bad->second;
        }
      }
    }
    if (cr.kernel_share) {
      r.kernel_share = std::min(r.kernel_share.value_or(1.0), *cr.kernel_share);
    }
    if (auto sp = same_clock_speedup(cr)) speedups.push_back(*sp);
    r.cases.push_back(std::move(cr));
  }
  r.overhead_s = std::max(0.0, (monotonic_seconds() - t0) - w.own_seconds);
  if (std::getenv("KBX_DEBUG_TIMING")) {
    std::fprintf(stderr,
                 "kbx: %s: worker %.2f s (candidate's own %.2f s, inputs and outputs %.2f s, "
                 "%d of %zu cases' inputs rebuilt), judging %.2f s (comparing %.2f s, probe "
                 "records %.2f s)\n",
                 task.id().c_str(), t_worker, w.own_seconds, w.io_seconds, w.inputs_rebuilt,
                 w.cases.size(), monotonic_seconds() - t_spawn - t_worker, compare_s, probe_s);
  }
  if (!st.keep_files) fs::remove_all(job_dir);

  if (!w.tampered.empty() && first_fail == Status::Passed) {
    std::string names;
    for (const auto& n : w.tampered) names += (names.empty() ? "" : ", ") + n;
    first_fail = Status::TimerTampered;
    first_detail = "the candidate replaced " + names +
                   " (timings come from the probe and the "
                   "worker's own references; the job fails all the same)";
  }
  if (first_fail != Status::Passed) return finish(first_fail, first_detail);
  if (w.error) {
    const std::string where = w.error->case_name ? " in case " + *w.error->case_name : "";
    return finish(status_of_error(*w.error),
                  w.error->type + where + ": " + tail(w.error->message, 1500));
  }
  auto [pstatus, pdetail] = process_failure(o);
  if (pstatus != Status::Passed) {
    return finish(pstatus,
                  pdetail + (o.stderr_kept.empty() ? "" : "; stderr: " + tail(o.stderr_kept, 800)));
  }
  if (static_cast<int>(w.cases.size()) < r.cases_total) {
    return finish(Status::HarnessError, "worker finished without running every case");
  }
  r.speedup = timing::geomean(speedups);
  return finish(Status::Passed, "");
}

}  // namespace kbx::sched
