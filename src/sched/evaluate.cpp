#include "sched/evaluate.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "common/error.h"
#include "common/util.h"
#include "kbx/probe_records.h"
#include "sched/events.h"
#include "timing/guards.h"
#include "timing/probe_timing.h"
#include "timing/stats.h"
#include "verdict/case_judge.h"
#include "verdict/levels.h"
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

/// confine.py's exit code when it could not confine the worker.
constexpr int kExitConfineFailed = 123;

/// The process-level outcome as a status, when it is a failure (else Passed).
std::pair<Status, std::string> process_failure(const sandbox::Outcome& o) {
  using End = sandbox::Outcome::End;
  if (o.end == End::TimedOut) return {Status::Timeout, o.describe() + "; process group killed"};
  if (o.end == End::SpawnFailed) return {Status::HarnessError, "could not start the worker"};
  if (o.end == End::Exited && o.exit_code == kExitConfineFailed &&
      first_event(o, "hello").is_null())
    return {Status::HarnessError, "could not confine the worker (before any candidate code ran)"};
  if (o.memory_limit_hit) return {Status::Oom, "killed by the job's memory limit (cgroup)"};
  if (o.end == End::Signaled) return {Status::Crash, "killed by " + o.describe()};
  if (!o.protocol_error.empty()) return {Status::Crash, o.protocol_error};
  if (first_event(o, "done").is_null()) {
    return {Status::Crash, fmt::format("worker ended ({}) before finishing: os._exit, a fatal "
                                       "error or an interpreter crash",
                                       o.describe())};
  }
  return {Status::Passed, ""};
}

/// Element count of a shape given as a JSON array.
std::int64_t elements(const json& shape) {
  std::int64_t n = 1;
  for (const auto& d : shape) n *= d.get<std::int64_t>();
  return n;
}

/// True when the case has work a Triton kernel must do under --track triton. A degenerate call
/// may be served by any code: no output element, an empty input tensor, or nothing but single
/// elements in and out (docs/task-format.md, "Track rules").
bool needs_triton_launch(const json& ref_case) {
  std::int64_t most = 0;
  bool any_output = false;
  const json outputs = ref_case.value("outputs", json::array());
  for (const auto& out : outputs) {
    const std::int64_t n = elements(out.value("shape", json::array()));
    any_output = any_output || n > 0;
    most = std::max(most, n);
  }
  if (!any_output) return false;
  const json inputs = ref_case.value("inputs", json::object());
  for (const auto& [name, in] : inputs.items()) {
    const std::int64_t n = elements(in.value("shape", json::array()));
    if (n == 0) return false;
    most = std::max(most, n);
  }
  return most > 1;
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
              {"inputs", fs::absolute(ref.in_dir / (name + ".in.kbt")).string()},
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
                    {"inputs", fs::absolute(ref.in_dir / (name + ".in.kbt")).string()},
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
  // Its folder is the supervisor's, never one the candidate could have written into.
  const fs::path judge_dir = env.work_dir / "trusted" / ("judge-" + job_dir.filename().string());
  auto o =
      run_worker(judge_env, {{"mode", "judge"}, {"device", env.device}, {"jobs", jobs}}, judge_dir);
  std::error_code ec;
  fs::remove_all(judge_dir, ec);
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
  std::string protocol_problem;  ///< the first event that broke the protocol, if any
  std::map<std::string, ErrorEvent> case_errors;  ///< a call that raised, by case (phase "run")
  std::optional<ErrorEvent> job_error;   ///< the first error that is no case's (import, timing)
  std::optional<ErrorEvent> last_error;  ///< the last error: what stopped the worker
};

WorkerReport collect(const sandbox::Outcome& o) {
  WorkerReport w;
  CandidateEvents ev = parse_candidate_events(o.events);
  w.protocol_problem = std::move(ev.problem);
  w.static_facts = std::move(ev.static_facts);
  for (const auto& err : ev.errors) {
    if (err.phase == "run" && err.case_name) {
      w.case_errors.emplace(*err.case_name, err);
    } else if (!w.job_error) {
      w.job_error = err;
    }
    w.last_error = err;
  }
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
    return verdict::judge_case({ref.dir / name, job_dir / name, ref_ev, cand_ev, ref.in_dir / name},
                               task.contract, device, ref_ev.value("random", false));
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

/// Compares each judged case as soon as the worker reports it, on threads of their own (two
/// cases at a time: a case's reading and small leaves are serial), so that comparing overlaps
/// the worker's later cases and timing while the thread that reads the worker's pipes (events,
/// the probe's records) and enforces its time limit never waits for a comparison. Random cases
/// wait for their judge process.
class EarlyComparer {
 public:
  EarlyComparer(const ReferenceCases& ref, fs::path job_dir, const suite::Task& task,
                std::string device)
      : ref_(ref), job_dir_(std::move(job_dir)), task_(task), device_(std::move(device)) {
    for (int k = 0; k < kThreads; ++k) threads_.emplace_back([this] { work(); });
  }
  ~EarlyComparer() { finish(); }
  EarlyComparer(const EarlyComparer&) = delete;
  EarlyComparer& operator=(const EarlyComparer&) = delete;

  /// The worker event handler: queues a case event for comparison.
  std::function<void(const json&)> handler() {
    return [this](const json& e) {
      if (e.value("ev", "") != "case") return;
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(e);
      cv_.notify_one();
    };
  }

  /// Waits for the queued comparisons; returns them.
  const EarlyComparisons& finish() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      cv_.notify_all();
    }
    for (auto& th : threads_) {
      if (th.joinable()) th.join();
    }
    return early_;
  }

 private:
  static constexpr int kThreads = 2;

  void work() {
    while (true) {
      json e;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
        if (queue_.empty()) return;
        e = std::move(queue_.front());
        queue_.pop_front();
        // a case reported twice is compared once (its first report), as before
        if (!claimed_.insert(e.value("case", "")).second) continue;
      }
      compare(e);
    }
  }

  void compare(const json& e) {
    const std::string name = e.value("case", "");
    for (const auto& ref_ev : ref_.cases) {
      if (ref_ev.value("case", "") != name) continue;
      if (!ref_ev.value("random", false)) {
        auto verdict = compare_case(ref_ev, e, ref_, job_dir_, task_, device_);
        std::lock_guard<std::mutex> lock(mu_);
        early_.emplace(name, std::pair{e, std::move(verdict)});
      }
      return;
    }
  }

  const ReferenceCases& ref_;
  const fs::path job_dir_;
  const suite::Task& task_;
  const std::string device_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<json> queue_;
  std::set<std::string> claimed_;  ///< cases taken by a thread (under mu_)
  bool done_ = false;
  EarlyComparisons early_;  ///< written under mu_ by the comparing threads, read after finish()
  std::vector<std::thread> threads_;  ///< last: they start once the members above exist
};

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
      cand_ev.value("triton_launches", 0) == 0 && needs_triton_launch(ref_ev)) {
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
  bool glue_is_work = false;  ///< the task's work is data movement: copies are library work
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
  const timing::ProbeTimes t =
      timing::analyze_calls(*p.index, ids->second, p.triton_functions, p.glue_is_work);
  cr.cand_event_samples = cr.cand_samples;
  cr.cand_event_ms = cr.cand_ms;
  cr.cand_samples = t.span_ms;
  cr.cand_ms = timing::median(cr.cand_samples);
  cr.timing_source = "probe";
  cr.kernel_share = t.kernel_share;
  cr.glue_share = t.glue_share;
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
                     fmt::format("{:.0f}% of the timed calls' compute kernel time was in library "
                                 "kernels, not the candidate's own (copies, casts and fills, "
                                 "{:.0f}% of the GPU time, are glue and not counted here{})",
                                 100 * (1 - *t.kernel_share), 100 * t.glue_share.value_or(0),
                                 p.glue_is_work ? ", except in this data-movement task" : "")};
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

/// True when the case lies inside KernelBenchX's own test scope (task.toml's compat.kbx_cases);
/// a fresh twin when its base case does.
bool in_kbx_scope(const suite::Task& task, const json& ref_ev) {
  const std::string name = ref_ev.value("fresh_of", ref_ev.value("case", ""));
  const auto& scope = task.compat.kbx_cases;
  return std::find(scope.begin(), scope.end(), name) != scope.end();
}

/// The job at the strict, core and kbx levels, from its cases' verdicts (verdict/levels.h).
void grade_levels(store::Result& r, const ReferenceCases& ref, const suite::Task& task,
                  Status job_fail, bool track_reject) {
  std::vector<verdict::GradedCase> cases;
  for (const auto& ev : ref.cases) {
    verdict::GradedCase g;
    g.name = ev.value("case", "");
    g.tier = ev.value("tier", "");
    g.in_kbx = in_kbx_scope(task, ev);
    for (const auto& cr : r.cases) {
      if (cr.name == g.name) g.result = &cr;
    }
    cases.push_back(std::move(g));
  }
  r.strict = verdict::grade(verdict::Level::Strict, cases, job_fail, track_reject);
  r.core = verdict::grade(verdict::Level::Core, cases, job_fail, track_reject);
  r.kbx = verdict::grade(verdict::Level::Kbx, cases, job_fail, track_reject);
}

/// The worker's timing event of each timed case.
std::map<std::string, json> timing_events(const sandbox::Outcome& o) {
  std::map<std::string, json> out;
  for (const auto& e : o.events) {
    if (e.value("ev", "") == "timing") out[e.value("case", "")] = e;
  }
  return out;
}

/// True when the case named base is among cases and passed: only then is a wrong fresh twin a
/// result that did not follow its inputs (a twin of a case that was wrong anyway is just wrong).
bool base_passed(const std::vector<store::CaseResult>& cases, const std::string& base) {
  return std::any_of(cases.begin(), cases.end(), [&](const store::CaseResult& c) {
    return c.name == base && c.status == verdict::status_name(Status::Passed);
  });
}

/// With KBX_DEBUG_TIMING: when each of the worker's events arrived (seconds after the spawn) and
/// the times it reported, to tell the harness's share of a job from the candidate's.
void print_event_timeline(const std::string& task_id, const sandbox::Outcome& o,
                          double before_spawn_s, double after_exit_s) {
  std::string line =
      fmt::format("kbx: {}: timeline: before spawn {:.2f} s", task_id, before_spawn_s);
  for (size_t i = 0; i < o.events.size() && i < o.event_seconds.size(); ++i) {
    const json& ev = o.events[i];
    line += fmt::format(" | {:.2f} {}", o.event_seconds[i], ev.value("ev", std::string("?")));
    if (ev.contains("case") && ev["case"].is_string()) line += " " + ev["case"].get<std::string>();
    for (const char* key : {"seconds", "call_s", "read_s", "save_s"}) {
      if (ev.contains(key) && ev[key].is_number()) {
        line += fmt::format(" {}={:.2f}", key, ev[key].get<double>());
      }
    }
  }
  line += fmt::format(" | exited {:.2f} | pipes closed {:.2f} | judged +{:.2f} s\n",
                      o.exited_seconds, o.wall_seconds, after_exit_s);
  std::fputs(line.c_str(), stderr);
}

/// The timing guards of issue 20 on a timed case that passed so far: the physical floor
/// (timing::roofline_floor against the run's calibration; without one the case is flagged
/// no_floor). A case timed on one set of values only is flagged same_values.
std::optional<std::pair<Status, std::string>> check_timing_guards(store::CaseResult& cr,
                                                                  const json& timing_ev,
                                                                  const JobSettings& st) {
  if (timing_ev.value("variants", json::array()).empty()) add_flag(cr.timing_flags, "same_values");
  if (st.peaks.empty()) {
    add_flag(cr.timing_flags, "no_floor");
    return std::nullopt;
  }
  if (!cr.cand_ms) return std::nullopt;
  const auto floor =
      timing::roofline_floor(cr.flops.value_or(0), cr.bytes.value_or(0), cr.dtype, st.peaks);
  if (floor && timing::below_floor(*cr.cand_ms, *floor)) {
    add_flag(cr.timing_flags, "below_roofline");
    return std::pair{Status::ImpossibleSpeed,
                     fmt::format("timed at {:.4f} ms per call, but the cost model's work needs at "
                                 "least {:.4f} ms at the calibrated peaks ({}): {:.0f}% of the "
                                 "roofline, beyond the {:.0f}% that timing error allows",
                                 *cr.cand_ms, floor->ms, floor->basis,
                                 100 * floor->ms / *cr.cand_ms, 100 * timing::kFloorMargin)};
  }
  return std::nullopt;
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
  // The graded levels (verdict/levels.h): every level gets the job's status unless the cases
  // were judged, in which case grade_levels() below fills them in.
  bool graded = false;
  auto finish = [&](Status s, std::string detail) {
    r.status = status_str(s);
    r.detail = std::move(detail);
    r.wall_s = monotonic_seconds() - t0;
    if (!graded) r.strict = r.core = r.kbx = {r.status, s == Status::Passed};
    r.strict.status = r.status;
    return r;
  };
  if (!ref.error.empty()) return finish(Status::ReferenceError, ref.error);
  if (!is_valid_utf8(cand.source)) {
    return finish(Status::BadInput, cand.origin + ": source is not valid UTF-8");
  }
  if (cand.source.find_first_not_of(" \t\r\n") == std::string::npos) {
    return finish(Status::BadInput, cand.origin + ": source is empty");
  }
  // The candidate's own folder: a size-capped tmpfs owned by a uid of its own when confined.
  const uid_t uid = env.confine ? sandbox::fresh_sandbox_uid() : geteuid();
  sandbox::JobFolder folder(job_dir, uid, env.job_disk_bytes, env.confine);
  if (st.keep_files) folder.keep();
  const fs::path source_path = job_dir / (task.name + ".py");
  write_file(source_path, cand.source);

  json request = build_request(env, st, task, ref, source_path, job_dir);
  // The order of value variants in the timed loops, chosen here at run time (issue 20).
  request["timing_seed"] =
      (st.seed ^ (static_cast<std::uint64_t>(cand.id) * 0x9E3779B97F4A7C15ULL)) & 0xFFFFFFFFFFFFULL;
  const double t_spawn = monotonic_seconds();
  EarlyComparer comparer(ref, job_dir, task, env.device);
  sandbox::Outcome o =
      run_candidate_worker(env, request, {job_dir, task.dir, ref.in_dir, uid}, comparer.handler());
  const EarlyComparisons& early = comparer.finish();
  const double t_worker = monotonic_seconds() - t_spawn;
  r.stdout_bytes = o.stdout_bytes + o.stderr_bytes;
  const WorkerReport w = collect(o);
  if (!w.protocol_problem.empty()) {  // the candidate's process wrote the stream
    return finish(Status::Crash, "protocol error in the worker's events: " + w.protocol_problem);
  }
  // A static reject under --track triton: the worker still ran the cases (untimed), so the
  // levels can say whether the values were right (how the job fares under --track any).
  std::optional<std::pair<Status, std::string>> track_reject;
  if (auto fail = static_failure(w.static_facts, task, st.track)) {
    if (fail->first != Status::StaticReject) return finish(fail->first, fail->second);
    track_reject = fail;
  }
  const auto timed_events = timing_events(o);
  const double t_probe = monotonic_seconds();
  ProbeData probe = read_probe(o, env, first_event(o, "static"));
  probe.glue_is_work = task.work == suite::Work::DataMovement;
  double probe_s = monotonic_seconds() - t_probe;
  double compare_s = 0;
  r.triton_launches = static_cast<int>(w.triton_launches);
  const auto random_verdicts = judge_random(env, task, ref, w.cases, job_dir);
  Status first_fail = Status::Passed;
  std::string first_detail;
  std::vector<double> speedups;
  int twins_of_failed = 0;  ///< fresh twins whose base case raised (never timed, so never run)
  for (const auto& ev : ref.cases) {
    store::CaseResult cr;
    cr.name = ev.value("case", "");
    cr.tier = ev.value("tier", "");
    cr.in_kbx = in_kbx_scope(task, ev);
    auto it = w.cases.find(cr.name);
    if (it == w.cases.end()) {
      if (ev.contains("fresh_of") && w.case_errors.count(ev.value("fresh_of", ""))) {
        ++twins_of_failed;  // its base case raised, so it was never timed: not missing
        continue;
      }
      if (auto err = w.case_errors.find(cr.name); err != w.case_errors.end()) {
        // the call raised and the worker went on: a verdict of this case, not of the job
        const Status s = status_of_error(err->second);
        cr.status = status_str(s);
        cr.error_ratio = 0;
        cr.values_ok = false;
        cr.detail = err->second.type + ": " + tail(err->second.message, 1500);
        if (first_fail == Status::Passed) {
          first_fail = s;
          first_detail = "case " + cr.name + ": " + cr.detail;
        }
        r.cases.push_back(std::move(cr));
      }
      continue;
    }
    const double t_compare = monotonic_seconds();
    auto v = judge_one(ev, it->second, ref, job_dir, task, env, st, random_verdicts, early);
    compare_s += monotonic_seconds() - t_compare;
    if (v.status != Status::Passed && ev.contains("fresh_of") &&
        base_passed(r.cases, ev.value("fresh_of", ""))) {
      v.detail = fmt::format(
          "on fresh values written into the tensors it was timed on, a timed call's result "
          "is wrong (a result cached across calls?): {}",
          v.detail);
      v.status = Status::StaleResult;
    }
    cr.status = status_str(v.status);
    cr.error_ratio = v.ratio;
    cr.detail = v.detail;
    cr.values_ok = v.status == Status::Passed || verdict::is_track_status(v.status);
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
    if (auto te = timed_events.find(cr.name);
        te != timed_events.end() && cr.status == status_str(Status::Passed)) {
      if (auto bad = check_timing_guards(cr, te->second, st)) {
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
    if (cr.glue_share) r.glue_share = std::max(r.glue_share.value_or(0.0), *cr.glue_share);
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
    print_event_timeline(task.id(), o, t_spawn - t0,
                         monotonic_seconds() - t_spawn - o.wall_seconds);
  }

  // What failed apart from the cases (it applies at every level), in the order of precedence
  // the job's status has always had after its first failing case.
  Status job_fail = Status::Passed;
  std::string job_detail;
  const std::optional<ErrorEvent>& err = w.job_error;
  auto [pstatus, pdetail] = process_failure(o);
  if (!w.tampered.empty()) {
    std::string names;
    for (const auto& n : w.tampered) names += (names.empty() ? "" : ", ") + n;
    job_fail = Status::TimerTampered;
    job_detail = "the candidate changed " + names +
                 " (timings come from the probe and the worker's own references, and "
                 "persisting L2 is put back before each call; the job fails all the same)";
  } else if (err) {
    const std::string where = err->case_name ? " in case " + *err->case_name : "";
    job_fail = status_of_error(*err);
    job_detail = err->type + where + ": " + tail(err->message, 1500);
  } else if (pstatus != Status::Passed) {
    job_fail = pstatus;
    job_detail = pdetail + (o.stderr_kept.empty() ? "" : "; stderr: " + tail(o.stderr_kept, 800));
  } else if (static_cast<int>(r.cases.size()) + twins_of_failed < r.cases_total) {
    // the worker stopped after a call that raised (e.g. a CUDA error): that error, else ours
    job_fail = w.last_error ? status_of_error(*w.last_error) : Status::HarnessError;
    job_detail = "worker finished without running every case";
  }
  grade_levels(r, ref, task, job_fail, track_reject.has_value());
  graded = true;
  if (track_reject) return finish(track_reject->first, track_reject->second);
  if (first_fail != Status::Passed) return finish(first_fail, first_detail);
  if (job_fail != Status::Passed) return finish(job_fail, job_detail);
  r.speedup = timing::geomean(speedups);
  return finish(Status::Passed, "");
}

}  // namespace kbx::sched
