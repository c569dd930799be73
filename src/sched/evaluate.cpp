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
#include "plan/candidates.h"
#include "sched/events.h"
#include "sched/gpu_slot.h"
#include "timing/case_timing.h"
#include "timing/stats.h"
#include "verdict/case_judge.h"
#include "verdict/job_status.h"
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

/// How the worker's process ended, in the plain facts the verdict decides from.
verdict::ProcessEnd process_end(const sandbox::Outcome& o) {
  using End = sandbox::Outcome::End;
  verdict::ProcessEnd p;
  p.end = o.end == End::TimedOut      ? verdict::ProcessEnd::End::TimedOut
          : o.end == End::SpawnFailed ? verdict::ProcessEnd::End::SpawnFailed
          : o.end == End::Signaled    ? verdict::ProcessEnd::End::Signaled
                                      : verdict::ProcessEnd::End::Exited;
  p.exit_code = o.exit_code;
  p.memory_limit_hit = o.memory_limit_hit;
  p.said_hello = !first_event(o, "hello").is_null();
  p.said_static = !first_event(o, "static").is_null();
  p.said_done = !first_event(o, "done").is_null();
  p.protocol_error = o.protocol_error;
  p.description = o.describe();
  return p;
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

json build_request(const WorkerEnv& env, const JobSettings& st, const suite::Task& task,
                   const ReferenceCases& ref, const fs::path& source_path,
                   const fs::path& job_dir) {
  json cases = json::array();
  for (const auto& ev : ref.cases) {
    const std::string name = ev.value("case", "");
    json c = {{"name", name},
              {"tier", ev.value("tier", "")},
              {"call", ev.at("call")},
              {"out_prefix", fs::absolute(job_dir / name).string()}};
    // none kept (lean_inputs): the worker rebuilds them from the case's seed, or fails the case
    if (ev.value("in_file", true)) {
      c["inputs"] = fs::absolute(ref.in_dir / (name + ".in.kbt")).string();
    }
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
  // Forked from the trusted workers' warm parent when there is one (no candidate's).
  const double t0 = monotonic_seconds();
  auto o = run_worker(judge_env, {{"mode", "judge"}, {"device", env.device}, {"jobs", jobs}},
                      judge_dir, {}, nullptr, env.trusted_launcher);
  if (std::getenv("KBX_DEBUG_TIMING")) {
    std::fprintf(stderr,
                 "kbx: %s: judge of %zu random cases %s: hello after %.2f s, %.2f s in all\n",
                 task.id().c_str(), jobs.size(),
                 env.trusted_launcher ? "forked from the warm parent" : "started cold",
                 seconds_to_event(o, "hello"), monotonic_seconds() - t0);
  }
  std::error_code ec;
  fs::remove_all(judge_dir, ec);
  for (const auto& e : o.events) {
    if (e.value("ev", "") == "judged") verdicts[e.value("case", "")] = e;
  }
  return verdicts;
}

/// What the candidate's worker reported: its cases, timings, launches and own time, from its
/// events parsed with every field required (sched/events.h).
struct WorkerReport {
  std::map<std::string, json> cases;                ///< each case's event as sent (validated)
  std::map<std::string, timing::TimedCalls> timed;  ///< per timed case
  std::set<std::string> tampered;                   ///< timing functions the candidate replaced
  double own_seconds = 0;  ///< import, first calls and timed work: not harness overhead
  double io_seconds = 0;   ///< reading inputs and saving results: harness overhead
  int inputs_rebuilt = 0;  ///< cases whose inputs the worker rebuilt instead of reading
  std::int64_t triton_launches = 0;
  std::optional<StaticEvent> static_facts;
  std::string protocol_problem;  ///< the broken event stream, else the first event that broke
                                 ///< the protocol, if any
  std::map<std::string, ErrorEvent> case_errors;  ///< a call that raised, by case (phase "run")
  std::optional<ErrorEvent> job_error;   ///< the first error that is no case's (import, timing)
  std::optional<ErrorEvent> last_error;  ///< the last error: what stopped the worker
};

WorkerReport collect(const sandbox::Outcome& o) {
  WorkerReport w;
  CandidateEvents ev = parse_candidate_events(o.events);
  // The stream itself broken (kbx ended the worker there, sandbox::run) before an event that
  // broke the contract: no event or error the worker sent decides the status then.
  w.protocol_problem = o.protocol_error.empty() ? std::move(ev.problem) : o.protocol_error;
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
    w.timed[t.name] = {std::move(t.ms),  std::move(t.host_ms), std::move(t.probe_ids),
                       t.varied,         t.contended,          t.waits_on_host,
                       t.holds_outrun(), t.gpu_ooms > 0};
    w.tampered.insert(t.tampered.begin(), t.tampered.end());
    w.own_seconds += t.seconds;
  }
  return w;
}

/// What kbx's comparisons of a job's outputs wait on: a quiet host's hush (every other CPU
/// user of the run is frozen then; kbx's comparison threads were the one left running).
verdict::Yield comparisons_yield(const WorkerEnv& env) {
  if (!env.quiet) return {};
  const sandbox::QuietRoom* room = env.quiet;
  return [room] { room->wait_while_hushed(); };
}

/// The C++ comparison of one case's outputs with the reference's.
verdict::CaseVerdict compare_case(const json& ref_ev, const json& cand_ev,
                                  const ReferenceCases& ref, const fs::path& job_dir,
                                  const suite::Task& task, const std::string& device,
                                  const verdict::Yield& yield) {
  const std::string name = ref_ev.value("case", "");
  try {
    return verdict::judge_case({ref.dir / name, job_dir / name, ref_ev, cand_ev, ref.in_dir / name},
                               task.contract, device, ref_ev.value("random", false), yield);
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

/// The reference's event of the case named `name`, or nullptr.
const json* reference_event(const ReferenceCases& ref, const std::string& name) {
  for (const auto& ev : ref.cases) {
    if (ev.value("case", "") == name) return &ev;
  }
  return nullptr;
}

/// Compares each judged case as soon as the worker reports it, on threads of their own (two
/// cases at a time: a case's reading and small leaves are serial), so that comparing overlaps
/// the worker's later cases and timing while the thread that reads the worker's pipes (events,
/// the probe's records) and enforces its time limit never waits for a comparison. Random cases
/// wait for their judge process.
class EarlyComparer {
 public:
  EarlyComparer(const ReferenceCases& ref, fs::path job_dir, const suite::Task& task,
                std::string device, verdict::Yield yield)
      : ref_(ref),
        job_dir_(std::move(job_dir)),
        task_(task),
        device_(std::move(device)),
        yield_(std::move(yield)) {
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
    const json* ref_ev = reference_event(ref_, name);
    if (ref_ev && !ref_ev->value("random", false)) {
      auto verdict = compare_case(*ref_ev, e, ref_, job_dir_, task_, device_, yield_);
      std::lock_guard<std::mutex> lock(mu_);
      early_.emplace(name, std::pair{e, std::move(verdict)});
    }
  }

  const ReferenceCases& ref_;
  const fs::path job_dir_;
  const suite::Task& task_;
  const std::string device_;
  const verdict::Yield yield_;
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
  verdict::CaseVerdict v =
      made != early.end() && made->second.first == cand_ev
          ? made->second.second
          : compare_case(ref_ev, cand_ev, ref, job_dir, task, env.device, comparisons_yield(env));
  if (v.status == Status::Passed && random) {
    auto jv = random_verdicts.find(name);
    if (jv != random_verdicts.end() && jv->second.value("oom", false)) {
      // the judge (kbx's own process) ran out of the GPU's memory: not the candidate's contract,
      // and not a verdict (a harness error runs again alone, then on resume)
      v.status = Status::HarnessError;
      v.detail = std::string(verdict::kJudgeOutOfGpuMemory) +
                 " (kbx's own work): " + jv->second.value("message", "");
    } else if (jv == random_verdicts.end() || !jv->second.value("ok", false)) {
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
timing::ProbeData read_probe(const sandbox::Outcome& o, const WorkerEnv& env,
                             const std::optional<StaticEvent>& facts) {
  timing::ProbeData p;
  p.expected = env.device != "cpu" && !env.probe_lib.empty();
  if (!p.expected) return p;
  // no static event (a worker that ended before it read the candidate): no kernel names
  if (facts) p.triton_functions = facts->triton_kernels;
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
    p.truncated = o.probe_truncated;
    p.index.emplace(records);
  }
  return p;
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
    for (const char* key : {"seconds", "call_s", "read_s", "save_s", "settle_s", "quiet_wait_s",
                            "setup_s", "estimate_s", "batches_s", "holds_s", "flush_s"}) {
      if (ev.contains(key) && ev[key].is_number()) {
        line += fmt::format(" {}={:.2f}", key, ev[key].get<double>());
      }
    }
    if (ev.contains("ms") && ev["ms"].is_array()) {  // a timing: its calls' own time and count
      double timed_ms = 0;
      for (const auto& ms : ev["ms"]) timed_ms += ms.is_number() ? ms.get<double>() : 0.0;
      line += fmt::format(" timed_s={:.3f} samples={}", timed_ms / 1e3, ev["ms"].size());
    }
    if (ev.contains("host_loop_ms") && ev["host_loop_ms"].is_number()) {  // the host's speed
      line += fmt::format(" host_loop_ms={:.3f}", ev["host_loop_ms"].get<double>());
    }
  }
  line += fmt::format(" | exited {:.2f} | pipes closed {:.2f} | judged +{:.2f} s\n",
                      o.exited_seconds, o.wall_seconds, after_exit_s);
  std::fputs(line.c_str(), stderr);
}

/// The status a timing fault gives its case.
Status status_of(timing::Fault fault) {
  switch (fault) {
    case timing::Fault::UnattributedWork: return Status::UnattributedWork;
    case timing::Fault::TimingMismatch: return Status::TimingMismatch;
    case timing::Fault::Fallback: return Status::Fallback;
    case timing::Fault::ImpossibleSpeed: return Status::ImpossibleSpeed;
  }
  return Status::TimingMismatch;
}

}  // namespace

double harness_overhead_seconds(double wall_seconds, double own_seconds,
                                const sandbox::Outcome& outcome) {
  return std::max(0.0,
                  wall_seconds - own_seconds - outcome.slot_wait_seconds - outcome.frozen_seconds);
}

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
  if (cand.source.size() > plan::kMaxSourceBytes) {
    return finish(Status::BadInput,
                  fmt::format("{}: source of more than {} bytes (a candidate's most)", cand.origin,
                              plan::kMaxSourceBytes));
  }
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
  // On the GPU, full-size cases and timed loops wait for the GPU's timing slot (issue 14).
  std::optional<GpuSlot> slot;
  if (env.device == "cuda") {
    slot.emplace(worker_gpu(env), "candidate " + task.id());
    request["gpu_slot"] = true;
    if (env.slot_at == "early" || (env.slot_at == "launch" && !env.probe_lib.empty())) {
      request["slot_at"] = env.slot_at;
    }
    // Until its CUDA starts the worker runs kbx's code alone, CPU work that a timed loop which
    // only queues GPU work need not freeze (sandbox::Spawn::cpu_only_until_cuda).
    if (env.quiet != nullptr && !env.quiet_cpu_first.empty()) {
      request["quiet_join"] = env.quiet_cpu_first;
    }
    if (env.timer_warmup_ms > 0) request["timer"]["warmup_ms"] = env.timer_warmup_ms;
    if (env.timer_hold_factor > 0) request["timer"]["hold_factor"] = env.timer_hold_factor;
    if (env.timer_keep_outputs > 0) request["timer"]["keep_outputs"] = env.timer_keep_outputs;
  }
  const double t_spawn = monotonic_seconds();
  EarlyComparer comparer(ref, job_dir, task, env.device, comparisons_yield(env));
  sandbox::Outcome o = run_candidate_worker(env, request, {job_dir, task.dir, ref.in_dir, uid},
                                            comparer.handler(), slot ? &*slot : nullptr);
  if (env.on_worker_exited) env.on_worker_exited();  // no process of the job is left
  const EarlyComparisons& early = comparer.finish();
  const double t_worker = monotonic_seconds() - t_spawn;
  r.stdout_bytes = o.stdout_bytes + o.stderr_bytes;
  const WorkerReport w = collect(o);
  if (slot) {  // before the protocol: the worker was ended in the middle of its events
    if (auto fail = verdict::asked_after_handback(o.slot_asked_after_close)) {
      return finish(fail->status, fail->detail);
    }
  }
  if (auto fail = verdict::protocol_failure(w.protocol_problem)) {
    return finish(fail->status, fail->detail);
  }
  if (slot) {
    if (auto fail =
            verdict::timed_without_slot(first_event_index(o, "timing"), o.slot_granted_after)) {
      return finish(fail->status, fail->detail);
    }
    if (auto fail =
            verdict::timed_after_handback(last_event_index(o, "timing"), o.slot_released_after)) {
      return finish(fail->status, fail->detail);
    }
    if (auto fail = verdict::timed_between_grants(event_indices(o, "timing"), o.slot_gaps)) {
      return finish(fail->status, fail->detail);
    }
  }
  // A static reject under --track triton: the worker still ran the cases (untimed), so the
  // levels can say whether the values were right (how the job fares under --track any).
  std::optional<verdict::Failure> track_reject;
  if (auto fail = verdict::static_failure(w.static_facts, task.entry, st.track)) {
    if (fail->status != Status::StaticReject) return finish(fail->status, fail->detail);
    track_reject = fail;
  }
  const double t_probe = monotonic_seconds();
  timing::ProbeData probe = read_probe(o, env, w.static_facts);
  probe.glue_is_work = task.work == suite::Work::DataMovement;
  double probe_s = monotonic_seconds() - t_probe;
  double compare_s = 0;
  r.triton_launches = static_cast<int>(w.triton_launches);
  const auto random_verdicts = judge_random(env, task, ref, w.cases, job_dir);
  verdict::Failure first_fail;  ///< the first failing case's status, "case <name>: <detail>"
  auto case_failed = [&](const std::string& name, Status s, const std::string& detail) {
    if (first_fail.status == Status::Passed) first_fail = {s, "case " + name + ": " + detail};
  };
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
        const verdict::Failure f = verdict::case_error(err->second);
        cr.status = status_str(f.status);
        cr.error_ratio = 0;
        cr.values_ok = false;
        cr.detail = f.detail;
        case_failed(cr.name, f.status, cr.detail);
        r.cases.push_back(std::move(cr));
      }
      continue;
    }
    const double t_compare = monotonic_seconds();
    auto v = judge_one(ev, it->second, ref, job_dir, task, env, st, random_verdicts, early);
    compare_s += monotonic_seconds() - t_compare;
    if (v.status != Status::Passed && ev.contains("fresh_of") &&
        base_passed(r.cases, ev.value("fresh_of", ""))) {
      const std::string base = ev.value("fresh_of", "");
      if (const json* base_ev = reference_event(ref, base)) {
        v = verdict::fresh_twin_verdict(
            v, base, {ref.dir / base, job_dir / cr.name, *base_ev, it->second, ref.in_dir / base},
            task.contract, env.device, comparisons_yield(env));
      }
    }
    cr.status = status_str(v.status);
    cr.error_ratio = v.ratio;
    cr.detail = v.detail;
    cr.values_ok = v.status == Status::Passed || verdict::is_track_status(v.status);
    r.error_ratio = std::max(r.error_ratio, v.ratio);
    if (v.status == Status::Passed) {
      ++r.cases_passed;
    } else {
      case_failed(cr.name, v.status, v.detail);
    }
    auto fault = [&](const timing::Violation& bad) {
      cr.status = status_str(status_of(bad.fault));
      cr.detail = bad.detail;
      case_failed(cr.name, status_of(bad.fault), bad.detail);
    };
    const auto timed = w.timed.find(cr.name);
    const timing::TimedCalls* calls = timed == w.timed.end() ? nullptr : &timed->second;
    timing::fill_timing(cr, ev, calls);
    if (calls && probe.expected && v.status == Status::Passed) {
      const double t_analyze = monotonic_seconds();
      auto bad = timing::fill_probe_timing(cr, probe, *calls, st.track);
      probe_s += monotonic_seconds() - t_analyze;
      if (bad) fault(*bad);
    }
    if (calls && cr.status == status_str(Status::Passed)) {
      if (auto bad = timing::check_floor(cr, calls->varied, st.peaks)) fault(*bad);
    }
    if (cr.kernel_share) {
      r.kernel_share = std::min(r.kernel_share.value_or(1.0), *cr.kernel_share);
    }
    if (cr.glue_share) r.glue_share = std::max(r.glue_share.value_or(0.0), *cr.glue_share);
    if (auto sp = timing::same_clock_speedup(cr)) speedups.push_back(*sp);
    r.cases.push_back(std::move(cr));
  }
  r.overhead_s = harness_overhead_seconds(monotonic_seconds() - t0, w.own_seconds, o);
  if (std::getenv("KBX_DEBUG_TIMING")) {
    std::fprintf(stderr,
                 "kbx: %s: worker %.2f s (candidate's own %.2f s, inputs and outputs %.2f s, "
                 "%d of %zu cases' inputs rebuilt, waiting for the slot %.2f s, frozen %.2f s), "
                 "judging %.2f s (comparing %.2f s, probe records %.2f s), overhead %.2f s\n",
                 task.id().c_str(), t_worker, w.own_seconds, w.io_seconds, w.inputs_rebuilt,
                 w.cases.size(), o.slot_wait_seconds, o.frozen_seconds,
                 monotonic_seconds() - t_spawn - t_worker, compare_s, probe_s, r.overhead_s);
    print_event_timeline(task.id(), o, t_spawn - t0,
                         monotonic_seconds() - t_spawn - o.wall_seconds);
  }

  // What failed apart from the cases: it applies at every level (verdict/job_status.h).
  verdict::JobWide wide;
  wide.tampered = w.tampered;
  wide.job_error = w.job_error;
  wide.last_error = w.last_error;
  wide.process = verdict::process_failure(process_end(o));
  wide.stderr_kept = o.stderr_kept;
  wide.cases_missing = static_cast<int>(r.cases.size()) + twins_of_failed < r.cases_total;
  const verdict::Failure job_fail = verdict::job_wide_failure(wide);
  grade_levels(r, ref, task, job_fail.status, track_reject.has_value());
  graded = true;
  const verdict::Failure job = verdict::job_status(track_reject, first_fail, job_fail);
  if (job.status != Status::Passed) return finish(job.status, job.detail);
  r.speedup = timing::geomean(speedups);
  return finish(Status::Passed, "");
}

}  // namespace kbx::sched
