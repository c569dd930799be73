#include "sched/eval.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/fingerprint.h"
#include "common/util.h"
#include "plan/candidates.h"
#include "revision.h"
#include "sandbox/warm.h"
#include "sched/baselines.h"
#include "sched/evaluate.h"
#include "sched/gpu_slot.h"
#include "sched/jobs.h"
#include "sched/progress.h"
#include "sched/ref_cache.h"
#include "sched/ref_pipeline.h"
#include "sched/reference.h"
#include "sched/room.h"
#include "store/baselines.h"
#include "store/calibration.h"
#include "store/lock.h"
#include "store/store.h"
#include "timing/case_timing.h"

namespace kbx::sched {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Eager loops of a task that take this long (seconds, summed over its full cases) mark it as
/// one that holds the timing slot long (heavy_tasks_first).
constexpr double kHeavySlotSeconds = 1.0;

/// The candidates of --candidates, read (and their problems said) before any database is opened:
/// a wrong path creates nothing.
std::optional<plan::Found> read_candidates(const EvalOptions& o, const suite::Suite& suite) {
  if (o.candidates.empty()) return std::nullopt;
  plan::Found found = plan::from_path(o.candidates, o.method);
  plan::keep_known_tasks(found, suite);
  for (const auto& p : found.problems) say(p);
  return found;
}

std::vector<store::Candidate> gather_candidates(const EvalOptions& o, const suite::Suite& suite,
                                                store::Store& db,
                                                std::optional<plan::Found> found) {
  std::vector<store::Candidate> cands;
  if (found) {
    for (auto& c : found->candidates) {
      c.id = db.add_candidate(c);
      cands.push_back(std::move(c));
    }
  } else if (!o.candidate_ids.empty()) {
    cands = db.candidates_by_id(o.candidate_ids);
  } else {
    cands = db.latest_candidates(o.method);
    if (cands.empty()) {
      throw Error("no candidates stored for method '" + o.method + "' in " + o.db.string() +
                  " (pass --candidates DIR|FILE.jsonl or run kbx import first)");
    }
  }
  auto wanted = suite::select(suite, o.category, o.tasks);
  std::vector<store::Candidate> kept;
  for (auto& c : cands) {
    bool in = std::any_of(wanted.begin(), wanted.end(), [&](auto* t) { return t->id() == c.task; });
    if (in) kept.push_back(std::move(c));
  }
  return kept;
}

/// The candidates of this shard's jobs (dist/shard.h), in their order. A job's key is its task,
/// method and source hash: the same on every machine that reads the same candidates.
std::vector<store::Candidate> keep_shard(std::vector<store::Candidate> cands, dist::Shard shard) {
  std::vector<std::string> keys;
  for (const auto& c : cands) keys.push_back(c.task + "|" + c.method + "|" + c.sha256);
  std::vector<store::Candidate> mine;
  for (std::size_t k : dist::shard_members(keys, shard)) mine.push_back(std::move(cands[k]));
  return mine;
}

json environment_of(const json& hello, const WorkerEnv& env) {
  const auto& ab = sandbox::abilities();
  json e = hello.is_null() ? json::object() : hello;
  e["sandbox"] = ab.describe();
  e["sandbox"]["candidates_confined"] = env.confine;
  e.erase("ev");
  e.erase("pid");
  e["kbx_version"] = KBX_VERSION;
  e["kbx_revision"] = kbx::revision();
  e["python_path"] = env.python.path;
  e["python_chosen_by"] = env.python.chosen;
  e["network_namespace"] = ab.network_namespace;
  if (!ab.network_namespace) e["network_namespace_note"] = ab.network_namespace_note;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  e["host"] = host;
  if (e.contains("clocks")) {  // nvidia-smi's reading as the reference worker started
    e["clocks_start"] = e["clocks"];
    e.erase("clocks");
  }
  e["fingerprint"] = fingerprint(fingerprint_fields(e));
  return e;
}

fs::path default_work_root() {
  if (const char* w = std::getenv("KBX_WORK"); w && *w) return w;
  const char* tmp = std::getenv("TMPDIR");
  return fs::path(tmp && *tmp ? tmp : "/tmp") / ("kbx-work-" + std::to_string(getuid()));
}

}  // namespace

int run_import(const fs::path& path, const std::string& method, const fs::path& db_path,
               const fs::path& suite_root) {
  const suite::Suite suite = suite::load_suite(suite_root);
  plan::Found found = plan::from_path(path, method);  // before the database: a wrong path
                                                      // creates nothing
  plan::keep_known_tasks(found, suite);
  for (const auto& p : found.problems) say(p);
  store::Store db(db_path);
  for (const auto& c : found.candidates) db.add_candidate(c);
  std::printf("imported %zu candidates for method %s into %s\n", found.candidates.size(),
              method.c_str(), db_path.string().c_str());
  return found.candidates.empty() ? 1 : 0;
}

/// The fingerprint of the machine workers run on, from a worker that only says hello.
std::string environment_fingerprint(const WorkerEnv& env) {
  WorkerEnv hello_env = env;
  hello_env.probe_lib.clear();
  hello_env.isolate_network = false;
  auto o =
      run_worker(hello_env, {{"mode", "hello"}, {"device", env.device}}, env.work_dir / "hello");
  const json hello = first_event(o, "hello");
  if (hello.is_null()) {
    throw Error("could not read this machine's environment for the baseline cache: " +
                o.describe() + " " + o.stderr_kept.substr(0, 500));
  }
  return environment_of(hello, env).value("fingerprint", "");
}

/// A scratch folder of this process alone: the run, the database and a random nonce in its name.
fs::path unique_work_dir(const EvalOptions& o, std::int64_t run_id, const std::string& key) {
  // absolute: the workers run in folders of their own (a relative --work gave every task a
  // reference_error, its worker not finding its folder)
  const fs::path root =
      fs::absolute(o.work_root.empty() ? default_work_root() : o.work_root).lexically_normal();
  const std::string db_tag =
      sha256_hex(fs::absolute(o.db).lexically_normal().string()).substr(0, 8);
  const fs::path dir = root / fmt::format("run-{}-{}-{}-{:08x}", run_id, key.substr(0, 8), db_tag,
                                          random_seed() & 0xffffffffULL);
  fs::create_directories(root);
  if (!fs::create_directory(dir)) throw Error("scratch folder " + dir.string() + " already exists");
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  return dir;
}

/// Refuses to run candidates unconfined unless asked to; says what protects them.
bool decide_confinement(const EvalOptions& o, bool private_mounts) {
  const auto& ab = sandbox::abilities();
  const char* switch_off = std::getenv("KBX_CONFINE");  // tests: show the attacks are real
  const bool turned_off = switch_off && std::string(switch_off) == "0";
  if (ab.isolation == sandbox::Isolation::Full && private_mounts && !turned_off) {
    say("sandbox: candidates run confined (own uid; mount, PID, IPC, network namespaces; minimal "
        "filesystem; " +
        std::string(ab.cgroup ? "cgroup v2 limits" : "rlimits, no cgroup v2: " + ab.cgroup_note) +
        ")");
    return true;
  }
  const std::string why =
      ab.isolation_note.empty() ? "no private mount namespace for kbx" : ab.isolation_note;
  if (!o.allow_unisolated) {
    throw Error("this machine cannot confine candidates (" + why +
                "); run kbx as root, or pass --allow-unisolated to run them with the "
                "invoking user's rights (every result of the run is then marked unisolated)");
  }
  say("sandbox: WARNING: candidates are NOT confined (" + why + "); --allow-unisolated given, " +
      "the run is marked unisolated" +
      (ab.network_namespace ? " (they still get a network namespace)" : ""));
  return false;
}

int jobs_for_gpu_memory(std::uint64_t gpu_memory_bytes) {
  const std::uint64_t gib = 1ULL << 30;
  if (gpu_memory_bytes <= 34 * gib) return 1;
  return static_cast<int>(
      std::min<std::uint64_t>(1 + (gpu_memory_bytes - 32 * gib) / (8 * gib), 1024));
}

namespace {

/// A run mode: the flag's value, else $var's, else `fallback`; throws naming the variable, what
/// the mode is for and the modes it may be when it is none of `modes`.
std::string mode_from(const std::string& flag, const char* var, const std::string& fallback,
                      const std::vector<std::string>& modes, const std::string& what) {
  std::string mode = flag;
  if (mode.empty()) {
    const char* from_env = std::getenv(var);
    mode = from_env && *from_env ? from_env : fallback;
  }
  if (std::find(modes.begin(), modes.end(), mode) == modes.end()) {
    std::string choices;
    for (size_t k = 0; k < modes.size(); ++k) {
      choices += (k == 0 ? "" : k + 1 == modes.size() ? " or " : ", ") + modes[k];
    }
    throw Error(std::string(var) + "=" + mode + ": not a " + what + " mode; use " + choices);
  }
  return mode;
}

}  // namespace

std::string quiet_timing_mode(const std::string& flag) {
  return mode_from(flag, "KBX_QUIET_TIMING", "all", kQuietTimingModes, "quiet-timing");
}

std::string slot_at_mode(const std::string& flag) {
  return mode_from(flag, "KBX_SLOT_AT", "launch", kSlotAtModes, "slot");
}

std::string reference_worker_life(const std::string& flag) {
  return mode_from(flag, "KBX_REFERENCE_WORKER_LIFE", "lane", kReferenceWorkerLives,
                   "reference worker life");
}

std::string finishing_from_mode(const std::string& flag) {
  return mode_from(flag, "KBX_FINISHING_FROM", "exit", kFinishingFromModes, "finishing");
}

std::string quiet_cpu_first_mode() {
  const char* from_env = std::getenv("KBX_QUIET_CPU_FIRST");
  const std::string mode = from_env ? from_env : "";
  if (mode == "0") return "";
  if (mode.empty() || mode == "1" || mode == "cuda") return "cuda";
  if (mode == "context") return "context";
  throw Error("KBX_QUIET_CPU_FIRST=" + mode + ": use cuda (the default), context or 0");
}

namespace {

/// An on/off setting from the environment variable `name`: 1 on, 0 off, empty or unset
/// `fallback`. Throws naming the variable and `use` (what 1 and 0 mean) on anything else.
bool switch_from_environment(const char* name, const std::string& use, bool fallback = false) {
  const char* from_env = std::getenv(name);
  const std::string mode = from_env ? from_env : "";
  if (mode.empty()) return fallback;
  if (mode == "0") return false;
  if (mode == "1") return true;
  throw Error(std::string(name) + "=" + mode + ": use " + use);
}

}  // namespace

bool preload_compiler() {
  // Off unless asked for: on the H100 of session 31 (torch 2.11) the preload started CUDA in the
  // warm parent, unseen by its check, and every candidate forked from it failed
  return switch_from_environment(
      "KBX_PRELOAD_COMPILER",
      "1 (import torch.compile's modules in the warm parents) or 0 (not, the default)");
}

bool eager_redraw_from_environment() {
  return switch_from_environment(
      "KBX_EAGER_REDRAW",
      "1 (a short eager timing drawn a second time on inputs made again, kept when the first was "
      "more than 8% slower; the default) or 0 (one timing)",
      true);
}

namespace {

/// A number from the environment variable `name` within (above, at_most]; 0 when unset. Throws
/// naming the variable and what it takes (`what`) otherwise.
double timer_setting_from_environment(const char* name, double above, double at_most,
                                      const std::string& what) {
  const char* from_env = std::getenv(name);
  if (from_env == nullptr || *from_env == '\0') return 0;
  char* end = nullptr;
  const double value = std::strtod(from_env, &end);
  if (end == from_env || *end != '\0' || !(value > above && value <= at_most)) {
    throw Error(std::string(name) + "=" + from_env + ": " + what);
  }
  return value;
}

}  // namespace

double timer_warmup_ms_from_environment() {
  const double from_env = timer_setting_from_environment(
      "KBX_TIMER_WARMUP_MS", 0, 100,
      fmt::format("a number of milliseconds above 0 and at most 100 (unset: {})",
                  kCandidateTimerWarmupMs));
  return from_env > 0 ? from_env : kCandidateTimerWarmupMs;
}

double timer_hold_factor_from_environment() {
  return timer_setting_from_environment(
      "KBX_TIMER_HOLD_FACTOR", 1, 4,
      "a factor above 1 and at most 4 of the last batch's enqueue time (unset: the timer's 2)");
}

int timer_keep_outputs_from_environment() {
  const std::string what =
      "a whole number of outputs from 1 to 4 (unset: none kept, each freed before the next call)";
  const double keep = timer_setting_from_environment("KBX_TIMER_KEEP_OUTPUTS", 0, 4, what);
  if (keep != static_cast<int>(keep)) {
    throw Error(
        fmt::format("KBX_TIMER_KEEP_OUTPUTS={}: {}", std::getenv("KBX_TIMER_KEEP_OUTPUTS"), what));
  }
  return static_cast<int>(keep);
}

int reference_workers(const std::string& device, int lanes) {
  if (device != "cuda" || lanes <= 1) return 1;
  return std::min(8, lanes / 2 + 2);
}

std::size_t reference_chunk(const std::string& device) {
  return device == "cuda" ? 2 : 16;
}

std::size_t live_task_cap(const std::string& device, std::size_t chunk, int lanes,
                          int reference_workers) {
  const std::size_t chunks_ahead = device == "cuda" ? 4 : 2;
  const std::size_t busy = static_cast<std::size_t>(std::max(lanes, 0)) +
                           static_cast<std::size_t>(std::max(reference_workers, 0)) * chunk;
  return std::max(chunks_ahead * chunk, device == "cuda" ? busy : 0);
}

fs::path references_kernel_cache(const std::string& option, bool candidates_confined) {
  const std::optional<fs::path> folder = kernel_cache_folder(option);
  if (!folder) return {};
  if (!candidates_confined) {
    if (!option.empty()) {
      say("--kernel-cache is off: candidates are not confined and could write kernels into it "
          "that the references would run");
    }
    return {};
  }
  std::error_code ec;
  fs::create_directories(*folder, ec);
  if (ec || !fs::is_directory(*folder)) {
    say(fmt::format("the references' kernel cache is off: cannot make {} ({})", folder->string(),
                    ec ? ec.message() : "not a folder"));
    return {};
  }
  // kbx's own only: a kernel another user could write there would run in the references
  struct stat st {};
  const auto owned = [&] { return ::stat(folder->c_str(), &st) == 0 && st.st_uid == ::geteuid(); };
  if (owned()) fs::permissions(*folder, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (!owned() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    say(
        fmt::format("the references' kernel cache is off: {} is not kbx's user's alone (owner "
                    "uid {}, mode {:o}); give --kernel-cache a folder of its own",
                    folder->string(), st.st_uid, st.st_mode & 07777));
    return {};
  }
  return fs::absolute(*folder);
}

int default_jobs(const std::string& device, unsigned cores) {
  const int n = static_cast<int>(std::max(1u, cores));
  return device == "cuda" ? std::clamp(n * 3 / 4, 1, 12) : n;
}

namespace {

/// The modes of a run, each from its flag, else its variable, else its default (off the GPU,
/// no quiet timing and the slot at the call).
struct RunModes {
  std::string quiet_timing, slot_at, finishing_from, reference_worker_life;
};

RunModes run_modes(const EvalOptions& o) {
  return {o.device == "cuda" ? quiet_timing_mode(o.quiet_timing) : "off",
          o.device == "cuda" ? slot_at_mode(o.slot_at) : "call",
          finishing_from_mode(o.finishing_from), reference_worker_life(o.reference_worker_life)};
}

/// The GPU's timing settings of a run's workers (quiet hosts, the slot's moment, the timers'
/// experiments; each said when not the default) and the slot holders' CPUs, one per GPU the run
/// uses (the first also the references'), kept for them where the machine allows.
std::vector<int> configure_cuda_timing(const EvalOptions& o, const RunModes& modes,
                                       sandbox::QuietRoom& quiet_room, WorkerEnv& env) {
  const std::string& quiet = modes.quiet_timing;
  const std::string& slot_at = modes.slot_at;
  std::vector<int> slot_cpus;
  if (quiet != "off") env.quiet = &quiet_room;
  env.quiet_all = quiet == "all";
  if (quiet != "all") say("quiet timing: " + quiet);
  env.slot_at = slot_at;
  env.quiet_cpu_first = quiet_cpu_first_mode();
  env.timer_warmup_ms = timer_warmup_ms_from_environment();
  if (env.timer_warmup_ms != kCandidateTimerWarmupMs) {
    say(
        fmt::format("timing: candidates' timer warm-up {} ms ($KBX_TIMER_WARMUP_MS; the "
                    "references' eager timing keeps the timer's own)",
                    env.timer_warmup_ms));
  }
  env.timer_hold_factor = timer_hold_factor_from_environment();
  if (env.timer_hold_factor > 0) {
    say(
        fmt::format("timing: candidates' batches held {}x their enqueue time "
                    "($KBX_TIMER_HOLD_FACTOR; the references' eager timing keeps the timer's 2x)",
                    env.timer_hold_factor));
  }
  env.eager_redraw = eager_redraw_from_environment();
  if (!env.eager_redraw) {
    say("timing: each short eager timing drawn once ($KBX_EAGER_REDRAW=0; by default a second "
        "draw on inputs made again replaces a first more than 8% slower)");
  }
  env.timer_keep_outputs = timer_keep_outputs_from_environment();
  if (env.timer_keep_outputs > 0) {
    say(
        fmt::format("timing: each call beside up to {} earlier outputs of its batch, the "
                    "candidates' and the references' ($KBX_TIMER_KEEP_OUTPUTS; an experiment)",
                    env.timer_keep_outputs));
  }
  if (env.quiet_cpu_first == "context") {
    say("quiet timing: candidates' jobs frozen only for host-bound calls until their CUDA "
        "context is made ($KBX_QUIET_CPU_FIRST=context)");
  } else if (env.quiet_cpu_first.empty()) {
    say("quiet timing: candidates' jobs frozen from their start ($KBX_QUIET_CPU_FIRST=0)");
  }
  if (slot_at == "launch") say("timing slot: asked for at a full-size call's first GPU work");
  if (slot_at == "early") {
    say("timing slot: asked for after a candidate's first small case, taken between the others");
  }
  // One CPU per GPU of --gpus (else the one CUDA_VISIBLE_DEVICES names); the first is also
  // the references' (they run on the first GPU).
  const std::vector<std::string> slot_gpus =
      o.gpus.empty() ? std::vector<std::string>{slot_key(visible_devices())} : o.gpus;
  for (size_t k = 0; k < slot_gpus.size(); ++k) {
    slot_cpus.push_back(slot_cpu_for(slot_gpus[k], kNvidiaProc, kPciDevices, static_cast<int>(k)));
  }
  env.slot_cpu = slot_cpus.front();
  // Before any thread or process starts: they all run on the other CPUs.
  const bool kept = leave_cpus_to_holders(slot_cpus);
  if (env.slot_cpu >= 0) {
    say(fmt::format("timing slot holders run on CPU {}{}", env.slot_cpu,
                    kept ? " (kept for them: kbx and the other jobs run on the others)" : ""));
  }
  return slot_cpus;
}

/// The run of this command (`key`): the stored one, resumed (unless --fresh), else a new one with
/// the settings it runs with.
store::Run find_or_add_run(const EvalOptions& o, store::Store& db, const std::string& key,
                           const std::vector<std::string>& tiers, const std::string& shard,
                           const WorkerEnv& env, const RunModes& modes) {
  std::optional<store::Run> run = o.fresh ? std::nullopt : db.find_run(key);
  if (run) {
    say(fmt::format("resuming run {} (same command as before; --fresh starts a new one)", run->id));
    return *run;
  }
  store::Run r;
  r.run_key = key;
  r.method = o.method;
  r.device = o.device;
  r.track = o.track;
  r.seed = o.seed ? *o.seed : random_seed();
  json settings{{"tiers", tiers},
                {"timeout_s", env.timeout_s},
                {"jobs", o.jobs},
                {"gpus", o.gpus},
                {"time", o.time},
                {"quiet_timing", modes.quiet_timing},
                {"slot_at", modes.slot_at},
                {"quiet_cpu_first", env.quiet_cpu_first},
                {"finishing_jobs", o.finishing_jobs},
                {"finishing_from", modes.finishing_from},
                {"reference_worker_life", modes.reference_worker_life},
                {"isolation", env.confine ? "confined" : "unisolated"},
                {"candidates", o.candidates}};
  if (o.shard) settings["shard"] = shard;
  if (env.timer_warmup_ms > 0) settings["timer_warmup_ms"] = env.timer_warmup_ms;
  if (env.timer_hold_factor > 0) settings["timer_hold_factor"] = env.timer_hold_factor;
  if (env.timer_keep_outputs > 0) settings["timer_keep_outputs"] = env.timer_keep_outputs;
  if (env.eager_redraw) settings["eager_redraw"] = true;
  r.settings_json = settings.dump();
  r.kbx_version = std::string(KBX_VERSION) + "+" + kbx::revision();
  r.id = db.add_run(r);
  run = db.find_run(key);
  return *run;
}

/// The run's reference jobs in chunks of `chunk` tasks, in task order; on the GPU the first chunk
/// is one task (the lanes and the other reference workers wait for its worker's hello).
std::vector<std::vector<ReferenceJob>> reference_chunks(
    const std::vector<std::string>& task_order,
    const std::map<std::string, const suite::Task*>& task_of, size_t chunk,
    const std::string& device, std::uint64_t seed, const std::vector<std::string>& tiers,
    const fs::path& work_dir) {
  std::vector<std::vector<ReferenceJob>> chunks;
  for (size_t first = 0; first < task_order.size();) {
    const size_t size = chunks.empty() && device == "cuda" ? 1 : chunk;
    auto& ref_jobs = chunks.emplace_back();
    const size_t end = std::min(task_order.size(), first + size);
    for (size_t k = first; k < end; ++k, ++first) {
      const suite::Task* t = task_of.at(task_order[k]);
      ref_jobs.push_back({t,
                          seed,
                          "ref",
                          tiers,
                          work_dir / "ref" / t->category / t->name,
                          {},
                          false,
                          work_dir / "inputs" / t->category / t->name,
                          true,
                          true});
    }
  }
  return chunks;
}

/// What the run's first hello (its first reference worker's, which saved the run's environment)
/// sets before any lane starts: the physical floor's peaks (issue 20: the highest of the
/// calibrations matching the run) and, unless --jobs was given, the lanes the GPU's memory takes.
/// Throws when --device cuda finds no CUDA GPU.
void take_first_hello(const json& hello, const EvalOptions& o, bool jobs_given, store::Store& db,
                      const std::string& run_key, JobSettings& st, JobContext& jobs) {
  if (auto with_env = db.find_run(run_key); with_env && o.time) {
    st.peaks = store::floor_peaks(db, *with_env);
  }
  if (!jobs_given && hello.contains("gpu_memory")) {
    const int cap = jobs_for_gpu_memory(hello.value("gpu_memory", std::uint64_t{0}));
    if (cap < jobs.lanes) {
      say(fmt::format("{} jobs at once (the GPU's memory takes no more)", cap));
      jobs.lanes = cap;
    }
  }
  if (o.device == "cuda" && !hello.value("cuda_available", false)) {
    throw Error(
        "--device cuda: torch sees no CUDA GPU here (use --device cpu for the CPU "
        "check under the Triton interpreter)");
  }
}

}  // namespace

int run_eval(const EvalOptions& options) {
  EvalOptions o = options;
  if (o.jobs <= 0) {
    o.jobs = std::max(default_jobs(o.device, std::thread::hardware_concurrency()),
                      static_cast<int>(o.gpus.size()));
  }
  if (o.device != "cuda") o.gpus.clear();
  // First, before any thread exists: kbx's own mount namespace, where job folders are mounted.
  const bool private_mounts = sandbox::enter_private_mount_namespace();
  if (o.device != "cpu" && o.device != "cuda") throw Error("--device must be cpu or cuda");
  if (o.track != "triton" && o.track != "any") throw Error("--track must be triton or any");
  const suite::Suite suite = suite::load_suite(o.suite_root);
  for (const auto& e : suite.errors) say(e);
  std::optional<plan::Found> found = read_candidates(o, suite);
  std::string holder;
  std::optional<store::WriterLock> lock = store::WriterLock::try_take(o.db, o.method, &holder);
  if (!lock) {
    say(
        fmt::format("{} is being written by another kbx eval ({}); wait for it to finish or use "
                    "another --db (kbx results reads it meanwhile)",
                    o.db.string(), holder));
    return kExitBusy;
  }
  store::Store db(o.db);
  std::vector<store::Candidate> cands = gather_candidates(o, suite, db, std::move(found));
  if (cands.empty()) {
    say("nothing to evaluate");
    return 1;
  }
  if (o.shard) {
    const std::size_t all = cands.size();
    cands = keep_shard(std::move(cands), *o.shard);
    say(fmt::format("shard {}: {} of the {} jobs", o.shard->text(), cands.size(), all));
    if (cands.empty()) return 0;  // more shards than jobs: an empty shard is done
  }

  // On the GPU, a slot holder's timed loops (by default all; or only host-bound calls) run with
  // every other job frozen: since session 12 most of a job's full-size work runs beside them.
  sandbox::QuietRoom quiet_room;
  if (!slot_trace_path().empty()) {
    quiet_room.on_hush([](const sandbox::HushCost& c) {
      trace_pipeline("hush",
                     fmt::format("freeze={:.4f},wait={:.4f},frozen={},running={},host_bound={}",
                                 c.freeze_seconds, c.wait_seconds, c.frozen, c.not_stopped,
                                 c.host_bound ? 1 : 0));
    });
  }
  WorkerEnv env;
  const RunModes modes = run_modes(o);
  std::vector<int> slot_cpus;  // the slot holders' CPUs, one per GPU the run uses
  if (o.device == "cuda") slot_cpus = configure_cuda_timing(o, modes, quiet_room, env);
  env.confine = decide_confinement(o, private_mounts);
  env.job_disk_bytes =
      o.job_disk_mb ? o.job_disk_mb << 20 : (o.device == "cpu" ? 4ULL << 30 : 64ULL << 30);
  env.job_memory_bytes = o.job_memory_mb ? o.job_memory_mb << 20 : physical_memory_bytes() / 2;
  env.python = find_python(o.python);
  if (!o.gpus.empty()) env.gpu = o.gpus.front();  // the references' GPU (their timing slot too)
  env.device = o.device;
  env.timeout_s = o.timeout_s > 0 ? o.timeout_s : (o.device == "cpu" ? 900 : 600);
  say(fmt::format("using {} (chosen by {})", env.python.path, env.python.chosen));
  if (o.device == "cuda" && o.time) {
    env.probe_lib = find_probe_library();
    say(env.probe_lib.empty()
            ? std::string("timing: CUDA events only (no libkbx_probe.so found; see docs/probe.md)")
            : "timing: CUPTI probe " + env.probe_lib.string() + ", CUDA events as cross-check");
  }

  const auto tiers = o.tiers.empty() ? tiers_for(o.device) : o.tiers;
  const std::string shard = o.shard ? o.shard->text() : "";
  const std::string key = plan::run_key(o.method, o.device, o.track, tiers, cands, shard);
  std::optional<store::Run> run = find_or_add_run(o, db, key, tiers, shard, env, modes);
  lock->set_run(run->id);
  env.work_dir = unique_work_dir(o, run->id, key);

  std::vector<store::Candidate> pending;
  for (auto& c : cands) {
    if (!db.has_result(run->id, c.id)) pending.push_back(c);
  }
  if (pending.empty()) {
    say(fmt::format("run {}: all {} jobs already have results", run->id, cands.size()));
    db.finish_run(run->id);
    return 0;
  }
  say(fmt::format("run {}: {} jobs to do ({} done before), device {}, track {}, seed {}", run->id,
                  pending.size(), cands.size() - pending.size(), o.device, o.track, run->seed));

  std::map<std::string, const suite::Task*> task_of;
  for (const auto& c : pending) task_of[c.task] = suite.find(c.task);
  // Candidates fork from a warm parent (started again when one dies); references and judges
  // from another (below).
  const fs::path warm_home = env.work_dir / "trusted" / "warm-parent";
  fs::create_directories(warm_home);
  // On a GPU the parent also imports what torch loads lazily (its first use would otherwise fall
  // inside a candidate's hold of the timing slot); on the CPU there is no slot to keep it out of.
  std::vector<std::string> warm_args{"--socket-fd", "3"};
  if (o.device == "cuda") warm_args.push_back("--preload-lazy-torch");
  // torch.compile's modules: once in the candidates' parent rather than in every candidate that
  // compiles; in the references' parent only for torch.compile baselines (its start delays the
  // first reference)
  const bool compiler = preload_compiler();
  std::vector<std::string> cand_warm_args = warm_args;
  if (compiler) cand_warm_args.push_back("--preload-compiler");
  if (compiler && o.compile_baseline && o.time) warm_args.push_back("--preload-compiler");
  WarmParents warm(o.warm, trusted_argv(env.python, "kbx_worker.zygote", cand_warm_args),
                   worker_environment(env, warm_home), warm_home);
  // References and judges (trusted code only) fork from a warm parent of their own: a chunk's
  // worker then skips the interpreter's start and torch's import (seconds each on a loaded host),
  // and no candidate ever runs in, or can bring down, the parent the references come from.
  const fs::path ref_warm_home = env.work_dir / "trusted" / "warm-parent-references";
  fs::create_directories(ref_warm_home);
  WarmParents ref_warm(o.warm, trusted_argv(env.python, "kbx_worker.zygote", warm_args),
                       worker_environment(env, ref_warm_home), ref_warm_home,
                       "references and judges");
  WorkerEnv cand_env = env;  // candidates: without the references' kernel cache
  env.kernel_cache = references_kernel_cache(o.kernel_cache, env.confine);
  JobSettings st;
  st.track = o.track;
  st.time = o.time;
  st.keep_files = o.keep_files;
  st.seed = run->seed;
  if (o.time) {  // a resumed run has its environment already; a new one gets it below
    st.peaks = store::floor_peaks(db, *run);
  }
  Progress progress("eval", static_cast<int>(pending.size()));
  std::mutex db_mu;
  JobContext jobs{db, db_mu, run->id, progress, cand_env, warm, st, o.jobs, 0, {}, o.gpus, {}};
  jobs.slot_cpus = slot_cpus;
  jobs.trusted_warm = &ref_warm;
  InterruptGuard interrupts(db, db_mu, run->id);
  pending = skip_struck(jobs, std::move(pending), task_of);
  if (!pending.empty()) {
    warm.get();      // it imports while the references run
    ref_warm.get();  // and this one while the environment's hello worker starts
  }
  std::vector<std::string> task_order;
  for (const auto& c : pending) {
    if (std::find(task_order.begin(), task_order.end(), c.task) == task_order.end()) {
      task_order.push_back(c.task);
    }
  }
  const bool compile_baseline = o.compile_baseline && o.time && o.device == "cuda";
  const bool eager_baseline = o.time && o.device == "cuda";  // eager timings cached per machine
  const std::string worker_hash =
      eager_baseline
          ? eager_worker_key(worker_sources_hash(), env.timer_keep_outputs, env.eager_redraw)
          : "";
  // the same settings in the reference cache's keys (its events hold the eager timings)
  const std::string eager_timer_settings =
      eager_baseline ? eager_worker_key("", env.timer_keep_outputs, env.eager_redraw) : "";
  // The reference cache: only while candidates are confined (an unconfined one, as this user,
  // could write into it and forge every later run's references).
  std::optional<ReferenceCache> ref_cache;
  const auto cache_folder = ReferenceCache::folder(o.ref_cache);
  if (cache_folder && !pending.empty()) {
    if (env.confine) {
      ref_cache.emplace(*cache_folder, o.ref_cache_mb << 20);
    } else {
      say("the reference cache is off: candidates are not confined and could write into it");
    }
  }
  const std::string fp =
      (eager_baseline || ref_cache) && !pending.empty() ? environment_fingerprint(env) : "";
  // This machine's cached eager samples, read once: a task with them is not timed again, and
  // those that hold the slot long go early, beside the others' references and correctness
  // cases, not alone at the run's end.
  std::map<std::string, EagerSamples> cached_eager_of;  // task -> samples (empty: none cached)
  if (eager_baseline && !o.retime_baselines && !fp.empty()) {
    std::map<std::string, double> weight;
    for (const auto& id : task_order) {
      cached_eager_of[id] = cached_eager(db, fp, *task_of.at(id), run->seed, worker_hash);
      weight[id] = cached_eager_seconds(cached_eager_of[id]);
    }
    task_order = heavy_tasks_first(task_order, weight, kHeavySlotSeconds);
  }
  // Tasks go in chunks: a reference worker computes a chunk's references while the lanes run the
  // candidates of the chunks before it; a task's files go when its last job ends, and a chunk
  // starts only while at most live_task_cap(...) tasks have files on disk.
  // The first chunk is one task: the lanes and the other reference workers wait for it (its
  // worker's hello), and on the H200 a task's references take 1-10 s (their files). On the GPU
  // chunks of two (files of the Activation tasks are 2-8 GB each, on a tmpfs).
  const size_t chunk =
      o.reference_chunk > 0 ? static_cast<size_t>(o.reference_chunk) : reference_chunk(o.device);
  std::vector<std::vector<ReferenceJob>> chunks =
      reference_chunks(task_order, task_of, chunk, o.device, run->seed, tiers, env.work_dir);
  JobFeed feed([&](const std::string&, const ReferenceCases& refs) {
    if (o.keep_files) return;
    std::error_code ec;
    fs::remove_all(refs.dir, ec);
    fs::remove_all(refs.in_dir, ec);
  });
  // What each task's references write, by category, as measured in this run (sched/room.h).
  FootprintGuess footprint(task_bytes_guess(o.device));
  if (!fp.empty()) {  // and what they wrote on this machine before
    for (const auto& id : task_order) {
      footprint.remembered(id, remembered_footprint(db, fp, *task_of.at(id), o.device));
    }
  }
  ReferenceRunParts parts{o,
                          env,
                          db,
                          db_mu,
                          run->id,
                          pending,
                          ref_warm,
                          feed,
                          ref_cache ? &*ref_cache : nullptr,
                          [&](const json& hello) {
                            std::lock_guard<std::mutex> lock(db_mu);
                            db.set_run_environment(run->id, environment_of(hello, env).dump());
                          }};
  ReferenceBaselines baselines{fp,
                               worker_hash,
                               eager_timer_settings,
                               eager_baseline,
                               compile_baseline,
                               std::move(cached_eager_of)};
  ReferencePipeline references(std::move(parts), std::move(baselines), std::move(chunks),
                               footprint);
  // The first chunk before any lane starts: its worker's hello sets what the lanes read (the
  // floor's peaks, the lanes for the GPU's memory) and says whether CUDA is there at all.
  {
    json hello;
    references.run_first_chunk(hello);
    if (references.environment_saved())
      take_first_hello(hello, o, options.jobs > 0, db, key, st, jobs);
  }
  // The other chunks by reference_workers(...) workers at once: on the H200 one worker was the
  // run's critical path (3.4 s of reference work per task, the candidates done soon after).
  const int reference_lanes =
      o.reference_workers > 0 ? o.reference_workers : reference_workers(o.device, jobs.lanes);
  // With --finishing-jobs, a job whose worker has exited (--finishing-from exit: kbx's
  // comparisons remain) or, on a GPU, handed its slot back (handback: its files and teardown
  // too) finishes beside its lane's next one (LaneGate): its task is still live meanwhile. Off
  // by default: on the H200 three more from the hand-back beside 12 lanes made the 184
  // references slower (cut at 230 s against 193 s), with the GPU's memory full
  // (bench/results/2026-12-04-h200-s26); from the exit, not measured yet.
  jobs.finishing_from_exit = modes.finishing_from == "exit";
  if (o.device == "cuda" || jobs.finishing_from_exit) jobs.finishing_jobs = o.finishing_jobs;
  const std::size_t live_cap =
      o.live_tasks > 0
          ? static_cast<std::size_t>(o.live_tasks)
          : live_task_cap(o.device, chunk, jobs.lanes + jobs.finishing_jobs, reference_lanes);
  // By default (--reference-worker-life lane) a worker whose tasks all go on as they finish
  // (their eager timings cached) takes its lane's next chunk instead of ending, so that a warm
  // run starts a CUDA context per reference lane rather than per chunk (session 44: the driver
  // makes contexts one at a time, about 0.13 s each on an H100; session 45: 10% off the 184
  // references' warm run on an H100)
  const bool keep_workers = modes.reference_worker_life == "lane";
  if (!keep_workers) say("a reference worker per chunk (--reference-worker-life chunk)");
  references.start(reference_lanes, live_cap, keep_workers);
  // Parked jobs keep their tasks' files: with as many such tasks as lanes they run alone before
  // any other job (on the H100 in session 31 every job of a run was parked, and their files
  // filled /dev/shm until the kernel killed reference workers).
  feed.set_parked_bound(static_cast<size_t>(std::max(2, jobs.lanes)));
  run_jobs(jobs, feed, task_of);
  references.join();
  if (references.environment_saved()) store::record_end_clocks(db, run->id);
  if (const std::string alone = again_alone_summary(db.attempt_outcomes(run->id)); !alone.empty()) {
    say(fmt::format("run {}: {}", run->id, alone));
  }
  db.finish_run(run->id);
  warm.stop();
  ref_warm.stop();
  if (!o.keep_files) {
    std::error_code ec;
    fs::remove_all(env.work_dir, ec);
  }
  say(fmt::format("run {} finished; `kbx results --db {}` shows the table", run->id,
                  o.db.string()));
  return jobs.harness_errors ? 2 : 0;
}

}  // namespace kbx::sched
