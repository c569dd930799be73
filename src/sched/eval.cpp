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

/// What a chunk of references starts from, per task: the baselines cached for it, and its key
/// in the reference cache (restored: read from the cache, so not stored again).
struct ChunkBaselines {
  std::map<std::string, store::CaseSamples> compile;  ///< cached torch.compile samples
  std::map<std::string, EagerSamples> eager;          ///< cached eager samples
  std::map<std::string, std::string> cache_key;
  std::set<std::string> restored;
};

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
  const std::string quiet = o.device == "cuda" ? quiet_timing_mode(o.quiet_timing) : "off";
  const std::string slot_at = o.device == "cuda" ? slot_at_mode(o.slot_at) : "call";
  const std::string finishing_from = finishing_from_mode(o.finishing_from);
  const std::string worker_life = reference_worker_life(o.reference_worker_life);
  std::vector<int> slot_cpus;  // the slot holders' CPUs, one per GPU the run uses
  if (o.device == "cuda") {
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
      slot_cpus.push_back(
          slot_cpu_for(slot_gpus[k], kNvidiaProc, kPciDevices, static_cast<int>(k)));
    }
    env.slot_cpu = slot_cpus.front();
    // Before any thread or process starts: they all run on the other CPUs.
    const bool kept = leave_cpus_to_holders(slot_cpus);
    if (env.slot_cpu >= 0) {
      say(fmt::format("timing slot holders run on CPU {}{}", env.slot_cpu,
                      kept ? " (kept for them: kbx and the other jobs run on the others)" : ""));
    }
  }
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
  std::optional<store::Run> run = o.fresh ? std::nullopt : db.find_run(key);
  if (run) {
    say(fmt::format("resuming run {} (same command as before; --fresh starts a new one)", run->id));
  } else {
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
                  {"quiet_timing", quiet},
                  {"slot_at", slot_at},
                  {"quiet_cpu_first", env.quiet_cpu_first},
                  {"finishing_jobs", o.finishing_jobs},
                  {"finishing_from", finishing_from},
                  {"reference_worker_life", worker_life},
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
  }
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
  std::atomic<bool> environment_saved{false};
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
  std::vector<std::vector<ReferenceJob>> chunks;
  for (size_t first = 0; first < task_order.size();) {
    const size_t size = chunks.empty() && o.device == "cuda" ? 1 : chunk;
    auto& ref_jobs = chunks.emplace_back();
    const size_t end = std::min(task_order.size(), first + size);
    for (size_t k = first; k < end; ++k, ++first) {
      const suite::Task* t = task_of.at(task_order[k]);
      ref_jobs.push_back({t,
                          run->seed,
                          "ref",
                          tiers,
                          env.work_dir / "ref" / t->category / t->name,
                          {},
                          false,
                          env.work_dir / "inputs" / t->category / t->name,
                          true,
                          true});
    }
  }
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
  // Tasks whose references ran out of the GPU's memory beside other work, or whose baselines
  // met another process's GPU work that did not drain: computed again at the end, alone on the
  // GPU, before their jobs run (their error stands only then). Otherwise a candidate holding the
  // GPU's memory could turn another method's tasks into reference_error (session 29 on the
  // H200: a 32 GiB float64 shadow of an honest reference met 108 GiB held by the jobs beside
  // it), and one that queues seconds of kernels could slow the eager baselines timed meanwhile
  // (session 30: 2x for calls of 3 ms and more).
  std::mutex deferred_mu;
  std::vector<ReferenceJob> deferred;
  // What a chunk's tasks need once their references are computed, for those of `ref_jobs` in
  // `refs`: the cached baselines added (or the new ones saved), the reference cache stored, the
  // files' size measured, and the jobs handed to the lanes (or the task deferred to run alone).
  // Called for a task as soon as its worker has finished it, or for the rest of the chunk at the
  // worker's end; several at once for one chunk.
  auto finish_tasks = [&](const std::vector<ReferenceJob>& ref_jobs,
                          std::map<std::string, ReferenceCases>& refs,
                          const ChunkBaselines& chunk_of, bool alone) {
    if (eager_baseline) {
      std::lock_guard<std::mutex> lock(db_mu);
      use_eager_baselines(db, fp, worker_hash, ref_jobs, chunk_of.eager, refs);
    }
    for (const auto& job : ref_jobs) {
      const std::string task = job.task->id();
      auto it = refs.find(task + "|ref");
      if (ref_cache && !chunk_of.restored.count(task) && it != refs.end())
        ref_cache->store(chunk_of.cache_key.at(task), job, it->second);
    }
    if (compile_baseline) {
      std::lock_guard<std::mutex> lock(db_mu);
      use_compile_baselines(db, fp, ref_jobs, chunk_of.compile, refs);
    }
    for (const auto& job : ref_jobs) {
      const std::uint64_t bytes = reference_folder_bytes(job);
      footprint.measured(job.task->category, bytes);
      auto it = refs.find(job.task->id() + "|ref");
      if (!fp.empty() && it != refs.end() && it->second.error.empty()) {
        std::lock_guard<std::mutex> lock(db_mu);
        remember_footprint(db, fp, *job.task, o.device, bytes);
      }
    }
    for (const auto& job : ref_jobs) {
      const std::string task = job.task->id();
      std::vector<const store::Candidate*> todo;
      for (const auto& c : pending) {
        if (c.task == task) todo.push_back(&c);
      }
      auto it = refs.find(task + "|ref");
      if (it == refs.end()) continue;
      if (const auto retry = alone_retry(it->second.error)) {
        if (!alone) {
          say(fmt::format("reference {}: {}; computed again alone once the rest is done", task,
                          retry->deferred_because));
          trace_pipeline("refs_deferred", task);
          std::lock_guard<std::mutex> lock(deferred_mu);
          deferred.push_back(job);
          continue;
        }
        it->second.error = retry->prefix + " (computed again alone, after the rest of the run): " +
                           it->second.error;
      }
      trace_pipeline("fed", task);
      feed.add(task, std::move(it->second), std::move(todo));
    }
  };
  // What a chunk's jobs take from the machine's caches before its worker starts: cached
  // baselines (a task with them times none), references restored from the reference cache.
  auto prepare_chunk = [&](std::vector<ReferenceJob>& ref_jobs, ChunkBaselines& chunk_of) {
    for (auto& job : ref_jobs) {
      if (!compile_baseline) break;
      if (!o.retime_baselines) {
        std::lock_guard<std::mutex> lock(db_mu);
        chunk_of.compile[job.task->id()] =
            store::cached_baseline(db, fp, job.task->id(), job.task->hash, "compile");
      }
      job.compile_baseline = chunk_of.compile[job.task->id()].empty();
    }
    for (auto& job : ref_jobs) {
      if (!eager_baseline) break;
      if (auto it = cached_eager_of.find(job.task->id()); it != cached_eager_of.end()) {
        chunk_of.eager[job.task->id()] = it->second;
      }
      // the compile baseline is timed in the eager pass (the same inputs, under the slot)
      job.time_eager = chunk_of.eager[job.task->id()].events.empty() || job.compile_baseline;
      if (!job.time_eager) {
        say(
            fmt::format("reference {}: eager timings from this machine's cache "
                        "(--retime-baselines times them again)",
                        job.task->id()));
      }
    }
    for (const auto& job : ref_jobs) {
      const std::string task = job.task->id();
      chunk_of.cache_key[task] =
          ref_cache ? ref_cache->key(job, fp, o.time, eager_timer_settings) : "";
      if (ref_cache && !job.compile_baseline && ref_cache->restore(chunk_of.cache_key[task], job)) {
        chunk_of.restored.insert(task);
        say(fmt::format("reference {}: from the cache", task));
      }
    }
  };
  auto chunk_names = [](const std::vector<ReferenceJob>& ref_jobs) {  // for the pipeline trace
    std::string names;
    for (const auto& job : ref_jobs) names += (names.empty() ? "" : ",") + job.task->id();
    return names;
  };
  // One chunk's references (and compile baselines), its jobs then handed to the lanes; alone:
  // nothing else runs on the GPU (an error of its references is their own). With next_chunk
  // (--reference-worker-life lane), the worker goes on with the chunks it gives (after the
  // lane's gates) while all its tasks go on as they finish.
  auto feed_chunk = [&](std::vector<ReferenceJob>& ref_jobs, json* hello,
                        const std::function<void(const std::string&)>& files_written, bool alone,
                        const std::function<std::vector<ReferenceJob>*()>& next_chunk = {}) {
    std::deque<ChunkBaselines> baselines(1);  // per chunk the worker took
    std::vector<std::vector<ReferenceJob>*> taken = {&ref_jobs};
    prepare_chunk(ref_jobs, baselines.front());
    trace_pipeline("refs_start", chunk_names(ref_jobs));
    const auto ref_parent = ref_warm.get();  // null: started cold
    // the hello (with the machine's facts) only until the run's environment is saved: the first
    // chunk's, as a rule
    if (environment_saved) hello = nullptr;
    // A task the worker has finished goes on at once (session 43: on the H100 a task waited for
    // its chunk's other task and the worker's end), unless the run's environment is still to be
    // saved from this chunk's hello.
    std::vector<std::future<void>> finishing;  // those tasks' finish_tasks
    std::function<void(const std::string&, ReferenceCases&&)> task_ready;
    if (hello == nullptr) {
      task_ready = [&](const std::string& task, ReferenceCases&& rc) {
        for (size_t k = 0; k < taken.size(); ++k) {
          for (const auto& job : *taken[k]) {
            if (job.task->id() != task) continue;
            auto one = std::make_shared<std::map<std::string, ReferenceCases>>();
            one->emplace(task + "|ref", std::move(rc));
            const ChunkBaselines* chunk_of = &baselines[k];
            finishing.push_back(std::async(std::launch::async, [&, job, one, chunk_of] {
              finish_tasks({job}, *one, *chunk_of, alone);
            }));
            return;  // a task is in one chunk only
          }
        }
      };
    }
    // the worker's next chunk: the lane's gates passed, its caches read (this thread, as
    // task_ready: deque elements stay put for the finishing threads)
    std::function<std::vector<ReferenceJob>()> next_jobs;
    if (next_chunk && task_ready) {
      next_jobs = [&]() -> std::vector<ReferenceJob> {
        trace_pipeline("refs_done", chunk_names(*taken.back()));
        std::vector<ReferenceJob>* chunk = next_chunk();
        if (chunk == nullptr) return {};
        prepare_chunk(*chunk, baselines.emplace_back());
        taken.push_back(chunk);
        trace_pipeline("refs_start", chunk_names(*chunk));
        return *chunk;
      };
    }
    std::map<std::string, ReferenceCases> refs;
    try {
      refs = run_references(env, ref_jobs, o.time, hello, ref_parent.get(), files_written,
                            task_ready, next_jobs);
    } catch (...) {
      for (auto& f : finishing) f.wait();
      throw;
    }
    trace_pipeline("refs_done", chunk_names(*taken.back()));
    for (auto& f : finishing) f.get();
    if (hello && !hello->is_null() && !environment_saved) {
      std::lock_guard<std::mutex> lock(db_mu);
      db.set_run_environment(run->id, environment_of(*hello, env).dump());
      environment_saved = true;
    }
    // each chunk's tasks not handed on: those run_references returns
    for (size_t k = 0; k < taken.size(); ++k) {
      std::vector<ReferenceJob> rest;
      for (const auto& job : *taken[k]) {
        if (refs.count(job.task->id() + "|ref")) rest.push_back(job);
      }
      finish_tasks(rest, refs, baselines[k], alone);
    }
  };
  // The first chunk before any lane starts: its worker's hello sets what the lanes read (the
  // floor's peaks, the lanes for the GPU's memory) and says whether CUDA is there at all.
  if (!chunks.empty()) {
    json hello;
    const bool saved_before = environment_saved;
    feed_chunk(chunks.front(), &hello, {}, false);
    if (!saved_before && environment_saved) {
      // The physical floor's peaks (issue 20): the highest of the calibrations matching the run.
      if (auto with_env = db.find_run(key); with_env && o.time) {
        st.peaks = store::floor_peaks(db, *with_env);
      }
      if (options.jobs <= 0 && hello.contains("gpu_memory")) {  // --jobs not given
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
  }
  // The other chunks by reference_workers(...) workers at once: on the H200 one worker was the
  // run's critical path (3.4 s of reference work per task, the candidates done soon after).
  std::exception_ptr reference_failure;
  std::mutex failure_mu;
  std::atomic<size_t> next_chunk{1};
  // ... and while the machine has room for their files (on a GPU machine the work folder is
  // often /dev/shm: 184 tasks' references ran the H200 host out of memory at 113 GB of files).
  RoomGate room(room_reserve_bytes(), [&] { return free_bytes_for(env.work_dir); });
  const int reference_lanes =
      o.reference_workers > 0 ? o.reference_workers : reference_workers(o.device, jobs.lanes);
  // With --finishing-jobs, a job whose worker has exited (--finishing-from exit: kbx's
  // comparisons remain) or, on a GPU, handed its slot back (handback: its files and teardown
  // too) finishes beside its lane's next one (LaneGate): its task is still live meanwhile. Off
  // by default: on the H200 three more from the hand-back beside 12 lanes made the 184
  // references slower (cut at 230 s against 193 s), with the GPU's memory full
  // (bench/results/2026-12-04-h200-s26); from the exit, not measured yet.
  jobs.finishing_from_exit = finishing_from == "exit";
  if (o.device == "cuda" || jobs.finishing_from_exit) jobs.finishing_jobs = o.finishing_jobs;
  const std::size_t live_cap =
      o.live_tasks > 0
          ? static_cast<std::size_t>(o.live_tasks)
          : live_task_cap(o.device, chunk, jobs.lanes + jobs.finishing_jobs, reference_lanes);
  // A chunk past the lane's gates, until its worker ends or takes the next chunk: what its
  // tasks are guessed to write, which have all their files written (set from its lane, read by
  // the room gate from the others: such a task counts its whole guess as written, so that none
  // of it is still to write while its eager timing waits for the slot; session 19, H200, cold:
  // the lanes waited 785 s for room, guesses of such tasks among what held it), its ticket.
  struct ChunkInFlight {
    RoomGate& room;
    const std::vector<ReferenceJob>& jobs;
    std::vector<std::uint64_t> task_guess;
    std::vector<std::atomic<bool>> files_done;
    std::optional<int> ticket;
    ChunkInFlight(RoomGate& gate, const std::vector<ReferenceJob>& chunk)
        : room(gate), jobs(chunk), files_done(chunk.size()) {}
    ChunkInFlight(const ChunkInFlight&) = delete;
    ChunkInFlight& operator=(const ChunkInFlight&) = delete;
    ~ChunkInFlight() {
      if (ticket) room.leave(*ticket);
    }
    void written(const std::string& task) {
      for (size_t k = 0; k < jobs.size(); ++k) {
        if (jobs[k].task->id() == task) files_done[k] = true;
      }
    }
  };
  // Chunk i through the lane's gates: at most live_cap tasks live, room for its files
  auto enter_chunk = [&](size_t i) {
    trace_pipeline("gate_wait", fmt::format("chunk{}", i));
    feed.wait_until_live_at_most(live_cap);
    trace_pipeline("gate_pass", fmt::format("chunk{}", i));
    auto chunk = std::make_unique<ChunkInFlight>(room, chunks[i]);
    for (const auto& job : chunks[i])
      chunk->task_guess.push_back(footprint.guess(job.task->category, job.task->id()));
    const std::uint64_t guess =
        std::accumulate(chunk->task_guess.begin(), chunk->task_guess.end(), std::uint64_t{0});
    trace_pipeline("room_wait", fmt::format("chunk{}", i));
    // no task's files to wait for: none live, and none kept for parked jobs (those are made
    // to run alone, which frees theirs)
    const auto nothing_live = [&] { return feed.live() == 0 && !feed.parked_hold_files(); };
    // what the chunk's references have written so far (their folders)
    const ChunkInFlight* in_flight = chunk.get();
    chunk->ticket = room.enter(guess, nothing_live,
                               [in_flight] {
                                 return chunk_written_bytes(in_flight->jobs, in_flight->files_done,
                                                            in_flight->task_guess);
                               })
                        .ticket;
    trace_pipeline("room_pass", fmt::format("chunk{}", i));
    return chunk;
  };
  // By default (--reference-worker-life lane) a worker whose tasks all go on as they finish
  // (their eager timings cached) takes its lane's next chunk instead of ending, so that a warm
  // run starts a CUDA context per reference lane rather than per chunk (session 44: the driver
  // makes contexts one at a time, about 0.13 s each on an H100; session 45: 10% off the 184
  // references' warm run on an H100)
  const bool keep_workers = worker_life == "lane";
  if (!keep_workers) say("a reference worker per chunk (--reference-worker-life chunk)");
  auto reference_lane = [&] {
    try {
      for (size_t i; (i = next_chunk++) < chunks.size();) {
        std::unique_ptr<ChunkInFlight> in_flight = enter_chunk(i);
        json hello;
        std::optional<ReferenceTurn> turn(std::in_place, feed);
        std::function<std::vector<ReferenceJob>*()> more;
        if (keep_workers) {
          more = [&]() -> std::vector<ReferenceJob>* {
            const size_t k = next_chunk++;
            if (k >= chunks.size()) return nullptr;
            // Idle while it waits at the gates: not a reference in flight then, or jobs made to
            // run alone (JobFeed's drain, which waits for those) and this worker, which waits
            // for the drain, would wait for each other. The alone jobs then run beside its idle
            // CUDA context.
            turn.reset();
            in_flight.reset();  // the last chunk's files are written, its tasks gone on
            in_flight = enter_chunk(k);
            turn.emplace(feed);
            return &chunks[k];
          };
        }
        feed_chunk(
            chunks[i], &hello, [&](const std::string& task) { in_flight->written(task); }, false,
            more);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mu);
      if (!reference_failure) reference_failure = std::current_exception();
      next_chunk = chunks.size();  // the others stop after their chunk
    }
  };
  std::thread references([&] {
    std::vector<std::thread> workers;
    for (int k = 0; k < reference_lanes; ++k) workers.emplace_back(reference_lane);
    for (auto& w : workers) w.join();
    try {
      for (auto& job : deferred) {  // no reference lane is left to add to it
        feed.wait_until_live_at_most(0);
        std::vector<ReferenceJob> one{job};
        one.front().alone = true;
        json hello;
        const ReferenceTurn turn(feed);
        feed_chunk(one, &hello, {}, true);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mu);
      if (!reference_failure) reference_failure = std::current_exception();
    }
    feed.close();
  });
  // Parked jobs keep their tasks' files: with as many such tasks as lanes they run alone before
  // any other job (on the H100 in session 31 every job of a run was parked, and their files
  // filled /dev/shm until the kernel killed reference workers).
  feed.set_parked_bound(static_cast<size_t>(std::max(2, jobs.lanes)));
  run_jobs(jobs, feed, task_of);
  references.join();
  if (reference_failure) std::rethrow_exception(reference_failure);
  if (environment_saved) store::record_end_clocks(db, run->id);
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
