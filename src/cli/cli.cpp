#include "cli/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "common/error.h"
#include "common/util.h"
#include "dist/shard.h"
#include "dist/slurm.h"
#include "gen/generate.h"
#include "gen/method.h"
#include "report/analyze.h"
#include "report/html.h"
#include "report/report_data.h"
#include "report/table.h"
#include "revision.h"
#include "sandbox/process.h"
#include "sched/eval.h"
#include "sched/gpu_slot.h"
#include "sched/suite_check.h"
#include "sched/worker.h"
#include "store/calibration.h"
#include "store/merge.h"
#include "store/store.h"
#include "store/verdicts.h"
#include "suite/task.h"

namespace kbx::cli {
namespace fs = std::filesystem;

namespace {

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    for (auto& part : split(item, ',')) out.push_back(part);
  }
  return out;
}

int suite_list(const fs::path& root, const std::string& category, const std::string& format) {
  const suite::Suite s = suite::load_suite(root);
  for (const auto& e : s.errors) std::fprintf(stderr, "kbx: %s\n", e.c_str());
  auto tasks = suite::select(s, category, {});
  if (format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto* t : tasks) {
      arr.push_back({{"category", t->category},
                     {"name", t->name},
                     {"set", t->set},
                     {"difficulty", t->difficulty},
                     {"entry", t->entry},
                     {"signature", t->signature},
                     {"dtypes", t->contract.dtypes},
                     {"tolerance", suite::tolerance_name(t->contract.tolerance)},
                     {"deviation", t->compat.deviation},
                     {"hash", t->hash}});
    }
    std::printf("%s\n", arr.dump(2).c_str());
  } else if (format == "tsv") {
    std::printf("category\tname\tset\tdifficulty\tentry\tdtypes\ttolerance\tdeviation\n");
    for (const auto* t : tasks) {
      std::printf("%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", t->category.c_str(), t->name.c_str(),
                  t->set.c_str(), t->difficulty, t->entry.c_str(),
                  join(t->contract.dtypes, ",").c_str(),
                  suite::tolerance_name(t->contract.tolerance), t->compat.deviation ? "yes" : "no");
    }
  } else {
    std::printf("%-15s %-48s %-6s %-10s %s\n", "category", "name", "set", "tolerance", "dtypes");
    for (const auto* t : tasks) {
      std::printf("%-15s %-48s %-6s %-10s %s\n", t->category.c_str(), t->name.c_str(),
                  t->set.c_str(), suite::tolerance_name(t->contract.tolerance),
                  join(t->contract.dtypes, ",").c_str());
    }
    std::printf("%zu tasks\n", tasks.size());
  }
  return s.errors.empty() ? 0 : 1;
}

int suite_show(const fs::path& root, const std::string& id) {
  const suite::Suite s = suite::load_suite(root);
  const suite::Task* t = s.find(id);
  if (!t) throw Error(id + ": no such task in " + root.string() + " (kbx suite list shows them)");
  const auto& c = t->contract;
  std::printf("%s  (%s, difficulty %d)\n\n", t->id().c_str(), t->set.c_str(), t->difficulty);
  std::printf("entry:      %s\n", t->signature.c_str());
  std::printf("dtypes:     %s\n", join(c.dtypes, ", ").c_str());
  std::printf("tolerance:  %s", suite::tolerance_name(c.tolerance));
  if (c.tolerance == suite::Tolerance::Shadow) {
    std::printf(" (ratio <= %g, floor %g ulps)", c.ratio, c.ulp_floor);
  }
  if (c.tolerance == suite::Tolerance::Allclose) std::printf(" (rtol %g, atol %g)", c.rtol, c.atol);
  std::printf("\ntf32:       %s\n", c.tf32 ? "allowed" : "not allowed");
  std::printf("tags:       %s\n", join(t->tags, ", ").c_str());
  std::printf("folder:     %s\nhash:       %s\n\n%s\n", t->dir.c_str(), t->hash.c_str(),
              t->summary.c_str());
  if (!c.note.empty()) std::printf("\ncontract: %s\n", c.note.c_str());
  if (t->compat.deviation)
    std::printf("\ndeviation from KernelBenchX: %s\n", t->compat.note.c_str());
  return 0;
}

int results_cmd(const fs::path& db_path, const std::string& method, std::optional<std::int64_t> run,
                const std::string& format, const std::string& level) {
  if (!fs::exists(db_path))
    throw Error(db_path.string() + ": no such database (run kbx eval first)");
  store::Store db(db_path);
  auto rows = db.results(method, run);
  // --level core|kbx: the status of every row (and the pass counts) at that level; every format
  // still carries all three levels.
  for (auto& r : rows) {
    if (level == "core") r.status = r.core.status;
    if (level == "kbx") r.status = r.kbx.status;
  }
  report::RunCalibrations cals;  // each shown run's fingerprint and calibration (roofline)
  for (const auto& r : db.runs()) {
    auto of_run = [&](const store::Result& x) { return x.run_id == r.id; };
    if (std::any_of(rows.begin(), rows.end(), of_run))
      cals[r.id] = store::calibration_for_run(db, r);
  }
  if (format == "csv") {
    std::fputs(report::results_csv(rows, cals).c_str(), stdout);
  } else if (format == "json") {
    std::fputs(report::results_json(rows, cals).c_str(), stdout);
  } else if (format == "markdown") {
    std::fputs(report::results_markdown(rows, "kbx results", cals).c_str(), stdout);
  } else {
    if (rows.empty()) std::printf("no results in %s\n", db_path.c_str());
    std::fputs(report::results_table(rows, cals).c_str(), stdout);
  }
  return 0;
}

int report_cmd(const std::vector<std::string>& dbs, const std::vector<std::string>& methods,
               const fs::path& out) {
  const std::vector<fs::path> paths(dbs.begin(), dbs.end());
  const report::ReportData data = report::load_report(paths, methods);
  const report::ReportFiles files = report::write_report_folder(data, out);
  std::printf("wrote %s (%zu results from %zu database%s), %s, %s, %s\n", files.html.c_str(),
              data.results.size(), data.databases.size(), data.databases.size() == 1 ? "" : "s",
              files.markdown.filename().c_str(), files.csv.filename().c_str(),
              files.json.filename().c_str());
  return 0;
}

/// "0,1,1.5" as numbers; throws Error naming --fast-p on anything else.
std::vector<double> parse_fast_p(const std::string& text) {
  std::vector<double> out;
  for (const auto& part : split(text, ',')) {
    if (part.empty()) continue;
    try {
      size_t used = 0;
      out.push_back(std::stod(part, &used));
      if (used != part.size() || !(out.back() >= 0)) throw std::invalid_argument(part);
    } catch (const std::exception&) {
      throw Error("--fast-p " + text + ": '" + part +
                  "' is not a number >= 0 (give them comma-separated, e.g. 0,1,1.5,2)");
    }
  }
  return out;
}

int analyze_cmd(const std::vector<std::string>& dbs, const report::AnalyzeOptions& options,
                const std::string& format) {
  store::Verdicts verdicts;
  for (const auto& path : dbs) {
    if (!fs::exists(path)) throw Error(path + ": no such database (kbx eval writes one)");
    store::Store db(path);
    store::read_verdicts(db, path, verdicts);
  }
  const auto tables = report::analyze(verdicts, options);
  if (format == "csv") {
    std::fputs(report::tables_csv(tables).c_str(), stdout);
  } else if (format == "json") {
    const auto header = report::analyze_header(verdicts, options);
    std::fputs(report::tables_json(tables, header).c_str(), stdout);
  } else if (format == "markdown") {
    std::fputs(report::tables_markdown(tables, "kbx analyze").c_str(), stdout);
  } else {
    std::fputs(report::tables_text(tables).c_str(), stdout);
  }
  return 0;
}

/// A peak in the units people read: GB/s for bandwidth, T- or GFLOP/s (OP/s for int8) for rates.
std::string peak_text(const nlohmann::json& ev) {
  const double v = ev.value("value", 0.0);
  if (ev.value("unit", "") == "B/s") return fmt::format("{:.1f} GB/s", v / 1e9);
  const char* op = ev.value("name", "") == "int8" ? "OP/s" : "FLOP/s";
  return v >= 1e12 ? fmt::format("{:.1f} T{}", v / 1e12, op)
                   : fmt::format("{:.1f} G{}", v / 1e9, op);
}

/// One progress line per calibrate event, as it arrives.
void calibrate_progress(const nlohmann::json& ev) {
  const std::string kind = ev.value("ev", "");
  if (kind == "gpu") {
    std::fprintf(stderr, "kbx: calibrate: measuring %s\n", ev.value("name", "").c_str());
  } else if (kind == "peak") {
    const std::string name = ev.value("name", ""), source = ev.value("source", "");
    // a dense rate's source is the GEMM that set it; copy_bw's the access pattern ("add")
    const std::string from = source.empty()      ? ""
                             : name == "copy_bw" ? " (" + source + ")"
                                                 : " (" + source + " GEMM)";
    std::fprintf(stderr, "kbx: calibrate: %s %s%s\n", name.c_str(), peak_text(ev).c_str(),
                 from.c_str());
  } else if (kind == "skipped") {
    std::fprintf(stderr, "kbx: calibrate: %s skipped\n", ev.value("name", "").c_str());
  }
}

/// The calibrate worker's events, from a trusted process of its own (our code, no sandbox).
sandbox::Outcome run_calibrate_worker(const std::string& device, const std::string& python_flag) {
  sched::WorkerEnv env;
  env.python = sched::find_python(python_flag);
  env.device = device;
  env.timeout_s = 600;
  env.isolate_network = false;
  env.launcher = nullptr;
  env.work_dir = fs::temp_directory_path() / fmt::format("kbx-calibrate-{}", getpid());
  std::fprintf(stderr, "kbx: calibrate: device %s, using %s (chosen by %s)\n", device.c_str(),
               env.python.path.c_str(), env.python.chosen.c_str());
  std::optional<sched::GpuSlot> slot;  // its timed loops, alone on the GPU as any timing is
  if (device == "cuda") slot.emplace(sched::visible_devices());
  std::optional<sched::SlotHold> hold;
  if (slot) hold.emplace(*slot);
  auto o = sched::run_worker(env, {{"mode", "calibrate"}, {"device", device}},
                             env.work_dir / "worker", calibrate_progress);
  fs::remove_all(env.work_dir);
  return o;
}

int calibrate_cmd(const std::string& device, const fs::path& db_path,
                  const std::string& python_flag) {
  const fs::path folder = db_path.parent_path();
  if (!folder.empty() && !fs::is_directory(folder)) {
    throw Error("--db " + db_path.string() + ": folder " + folder.string() +
                " does not exist (create it or pick another path)");
  }
  const auto o = run_calibrate_worker(device, python_flag);
  const auto hello = sched::first_event(o, "hello");
  const auto error = sched::first_event(o, "error");
  if (device == "cuda" && ((!hello.is_null() && !hello.value("cuda_available", false)) ||
                           (!error.is_null() && error.value("kind", "") == "no_gpu"))) {
    std::fprintf(stderr,
                 "kbx: no GPU: calibrate needs one (use --device cpu to measure this CPU)\n");
    return 2;
  }
  if (o.end != sandbox::Outcome::End::Exited || o.exit_code != 0) {
    throw Error(
        "calibrate worker failed (" + o.describe() + "): " +
        o.stderr_kept.substr(o.stderr_kept.size() > 2000 ? o.stderr_kept.size() - 2000 : 0));
  }
  const store::Calibration cal = store::calibration_from_events(o.events, device);
  store::Store db(db_path);
  const auto id = store::save_calibration(db, cal);
  std::printf("calibration %lld: %s %s (fingerprint %s)\n%-8s %-28s %-8s %s\n",
              static_cast<long long>(id), device.c_str(), cal.gpu.c_str(), cal.fingerprint.c_str(),
              "peak", "value", "samples", "source");
  for (const auto& ev : o.events) {
    const std::string kind = ev.value("ev", "");
    if (kind == "peak") {
      std::printf("%-8s %-28s %-8d %s\n", ev.value("name", "").c_str(), peak_text(ev).c_str(),
                  ev.value("samples", 0), ev.value("source", "").c_str());
    } else if (kind == "skipped") {
      std::printf("%-8s skipped: %s\n", ev.value("name", "").c_str(),
                  ev.value("reason", "").c_str());
    }
  }
  std::printf("stored in %s; kbx results uses it for roofline fractions\n", db_path.c_str());
  return 0;
}

int doctor(const std::string& python_flag) {
  std::printf("kbx %s (%s)\nhome: %s\n", KBX_VERSION, kbx::revision(), kbx_home().c_str());
  const auto& ab = sandbox::abilities();
  std::printf("sandbox: network namespace %s%s\n", ab.network_namespace ? "yes" : "no",
              ab.network_namespace ? "" : (" (" + ab.network_namespace_note + ")").c_str());
  std::printf("sandbox: candidate isolation %s%s\n", sandbox::isolation_name(ab.isolation).c_str(),
              ab.isolation == sandbox::Isolation::Full
                  ? " (own uid; mount, PID, IPC, UTS, network namespaces; minimal filesystem)"
                  : (" (" + ab.isolation_note + ")").c_str());
  std::printf("sandbox: limits %s\n", ab.cgroup
                                          ? "cgroup v2 (memory.max, pids.max)"
                                          : ("rlimits only (" + ab.cgroup_note + ")").c_str());
  bool ok = true;
  try {
    auto py = sched::find_python(python_flag);
    std::printf("python: %s (chosen by %s)\n", py.path.c_str(), py.chosen.c_str());
    std::string cmd = "'" + py.path +
                      "' -c \"import torch, sys; print('torch', torch.__version__); "
                      "print('cuda available', torch.cuda.is_available()); "
                      "torch.cuda.is_available() and print('gpu', torch.cuda.get_device_name(0), "
                      "'x', torch.cuda.device_count(), 'cuda', torch.version.cuda); "
                      "import triton; print('triton', triton.__version__)\" 2>&1";
    std::fflush(stdout);
    ok = std::system(cmd.c_str()) == 0;
  } catch (const Error& e) {
    std::printf("python: %s\n", e.what());
    ok = false;
  }
  std::fflush(stdout);
  std::system(
      "nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader "
      "2>/dev/null | sed 's/^/nvidia-smi: /' || true");
  try {
    const fs::path probe = sched::find_probe_library();
    std::printf("probe: %s\n", probe.empty() ? "none found (GPU timing uses CUDA events only; "
                                               "build it or set KBX_PROBE_LIB)"
                                             : (probe.string() + " (GPU timing source)").c_str());
  } catch (const Error& e) {
    std::printf("probe: %s\n", e.what());
    ok = false;
  }
  return ok ? 0 : 1;
}

/// kbx eval's flags, bound to what they fill. Shared by `kbx eval` and `kbx slurm submit`, which
/// parses the eval arguments it passes on before it submits anything.
struct EvalFlags {
  sched::EvalOptions ev;
  std::vector<std::string> tasks, tiers;
  std::string seed_text, work, shard, gpus, baselines = "eager";
  bool cold = false, no_time = false;
};

/// Adds kbx eval's flags that choose what it judges (method, candidates, tasks, track, database,
/// shard, --fresh), bound to f (which must outlive the parse). kbx run has its own instead.
void add_eval_selection_flags(CLI::App* eval, EvalFlags& f) {
  sched::EvalOptions& ev = f.ev;
  eval->add_option("--method", ev.method, "method name the results are stored under")->required();
  eval->add_option("--candidates", ev.candidates,
                   "folder of Category/name.py files or a KernelBenchX .jsonl file; omitted: the "
                   "method's imported candidates");
  eval->add_option("--tasks", f.tasks, "only these tasks (Category/name, comma-separated)");
  eval->add_option("--category", ev.category, "only this category");
  eval->add_option("--track", ev.track,
                   "triton: the candidate's own Triton kernels must do the "
                   "work; any: any implementation")
      ->check(CLI::IsMember({"triton", "any"}))
      ->capture_default_str();
  eval->add_option("--db", ev.db, "results database")->capture_default_str();
  eval->add_option("--shard", f.shard,
                   "only shard i of N (i from 1 to N, e.g. 2/4): the jobs (candidate x task), "
                   "sorted by task, dealt round-robin, so that N shards run every job once on "
                   "any machines; each shard is a run of its own (rerunning resumes it), and "
                   "kbx merge joins their databases");
  eval->add_flag("--fresh", ev.fresh, "start a new run even if this command ran before");
}

/// Adds kbx eval's flags of how it runs the jobs (device, jobs, time limits, timing, sandbox),
/// bound to f; shared by kbx eval and kbx run.
void add_eval_run_flags(CLI::App* eval, EvalFlags& f) {
  sched::EvalOptions& ev = f.ev;
  eval->add_option("--device", ev.device,
                   "cuda (all cases, timed) or cpu (edge and small cases "
                   "under the Triton interpreter)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  eval->add_option("--gpus", f.gpus,
                   "GPUs to spread the jobs over (cuda): all, or CUDA_VISIBLE_DEVICES entries "
                   "such as 0,1; each has its own timing slot; the references run on the first "
                   "(default: the GPU CUDA_VISIBLE_DEVICES names first)");
  eval->add_option("--ref-cache", ev.ref_cache,
                   "the reference cache's folder, or off: reference outputs, shadows, inputs and "
                   "eager timings kept per task hash, seed, tiers and machine, shared by methods "
                   "and runs of the same --seed (default: $KBX_REF_CACHE, else "
                   "~/.cache/kbx/references; used only while candidates are confined)");
  eval->add_option(
      "--ref-cache-mb", ev.ref_cache_mb,
      "the reference cache's size cap: it keeps the entries that save the most reference "
      "work per byte (default 16384)");
  eval->add_option("--kernel-cache", ev.kernel_cache,
                   "the folder of the kernels PyTorch compiles at run time (torch.special's "
                   "airy_ai, zeta, polygamma...), or off: kept for the reference workers of "
                   "every run, which then skip seconds of compiling per such task; candidates "
                   "compile their own (default: $KBX_KERNEL_CACHE, else "
                   "~/.cache/kbx/torch-kernels; used only while candidates are confined)");
  eval->add_option("--quiet-timing", ev.quiet_timing,
                   "which timed loops run with the run's other jobs frozen (cuda): all (no other "
                   "job's GPU or CPU work overlaps a timed loop), host-bound (only calls that "
                   "wait on the host inside, as masked_select's: more work done meanwhile, "
                   "noisier timings) or off (default: $KBX_QUIET_TIMING, else all)")
      ->check(CLI::IsMember(sched::kQuietTimingModes));
  eval->add_option("--slot-at", ev.slot_at,
                   "when a candidate asks for the GPU's timing slot (cuda): call (before its "
                   "first full-size call) or launch (at that call's first GPU work, with the "
                   "CUPTI probe: what it compiles first, torch.compile's graphs or a Triton "
                   "kernel's new specialization, runs beside the other jobs; its launches, an "
                   "autotuner's trials too, hold the slot) or early (after its first edge or "
                   "small case, taken between the later ones, which run after the slot's "
                   "hand-back: no slot idle while the next job finishes its small cases) "
                   "(default: $KBX_SLOT_AT, else launch: on the H200 a cold torch.compile set took "
                   "3.51 s per kernel against 4.22 s, session 30)")
      ->check(CLI::IsMember(sched::kSlotAtModes));
  eval->add_option("--reference-workers", ev.reference_workers,
                   "reference workers at once, each computing a chunk of tasks' references while "
                   "the candidates of earlier chunks run (default: on cuda half of --jobs plus "
                   "two, at most 8, 1 with --jobs 1; on cpu 1)")
      ->check(CLI::Range(1, 16));
  eval->add_option("--reference-chunk", ev.reference_chunk,
                   "tasks per reference worker, each handed to the lanes as soon as the worker "
                   "has finished it (where its eager timing is cached); fewer workers start, "
                   "each with its CUDA start (default: 2 on cuda, 16 on cpu; the run's first "
                   "worker computes one task)")
      ->check(CLI::Range(1, 64));
  eval->add_option("--reference-worker-life", ev.reference_worker_life,
                   "lane (a reference worker whose tasks have all gone on takes its lane's next "
                   "chunk: one CUDA start per reference lane) or chunk (a worker per chunk) "
                   "(default: $KBX_REFERENCE_WORKER_LIFE, else lane: on an H100 the 184 "
                   "references' warm run took 146 s against 164 s, session 45)")
      ->check(CLI::IsMember(sched::kReferenceWorkerLives));
  eval->add_option(
          "--live-tasks", ev.live_tasks,
          "most tasks with reference files on disk (fed to the lanes, last job not "
          "ended) before another chunk of references starts; more lets the references "
          "run further ahead of the lanes, within the room gate's memory (default: on "
          "cuda the lanes and --finishing-jobs, plus two per reference worker, at least 8; "
          "on cpu 32)")
      ->check(CLI::Range(1, 1024));
  eval->add_option("--finishing-jobs", ev.finishing_jobs,
                   "jobs that may finish beside the --jobs lanes' next jobs, which start "
                   "meanwhile: from their worker's exit (kbx's comparisons) or, on cuda, from "
                   "their hand-back of the GPU's timing slot (their files and teardown too), as "
                   "--finishing-from says (default 0: on the H200, 3 more from the hand-back "
                   "beside 12 lanes filled its memory and made the run slower)")
      ->check(CLI::Range(0, 64));
  eval->add_option("--finishing-from", ev.finishing_from,
                   "when a finishing job frees its lane: exit (its worker's processes are gone) "
                   "or handback (cuda: it handed the GPU's timing slot back) (default: "
                   "$KBX_FINISHING_FROM, else exit)")
      ->check(CLI::IsMember(sched::kFinishingFromModes));
  eval->add_option(
      "--jobs", ev.jobs,
      "candidates evaluated at once (default: on cuda three quarters of the cores, at most 12 and "
      "as many as the GPU memory takes, their full-size cases and timed loops one "
      "at a time on the GPU; on cpu every core)");
  eval->add_option("--python", ev.python, "Python interpreter with torch and triton");
  eval->add_option("--seed", f.seed_text,
                   "input seed (default: fresh from the OS, stored with the run)");
  eval->add_option("--timeout", ev.timeout_s,
                   "seconds per candidate (default 600 on cuda, 900 on cpu)");
  eval->add_option("--work", f.work, "scratch folder for tensor files (default $KBX_WORK or /tmp)");
  eval->add_flag("--keep-files", ev.keep_files, "keep each job's folder after its verdict");
  eval->add_flag("--allow-unisolated", ev.allow_unisolated,
                 "run candidates even where kbx cannot confine them (not root): they then run "
                 "with your rights, and the run is marked unisolated");
  eval->add_option("--job-disk-mb", ev.job_disk_mb,
                   "size cap of a candidate's folder (default: 4096 on cpu, 65536 on cuda)");
  eval->add_option("--job-memory-mb", ev.job_memory_mb,
                   "memory cap of a candidate (cgroup v2; default: half of the machine's)");
  eval->add_option("--tiers", f.tiers,
                   "case tiers to run (edge,small,full; default: edge,small "
                   "on cpu, all on cuda)");
  eval->add_flag("--cold", f.cold,
                 "start every candidate and reference worker as a new interpreter instead of "
                 "forking it from a warm parent (candidates and references have one each)");
  eval->add_flag("--no-time", f.no_time, "skip timing (correctness only)");
  eval->add_option("--baselines", f.baselines,
                   "baselines timed against the candidates on the GPU: eager (always), or "
                   "eager,compile to add torch.compile of each reference (cached per machine "
                   "fingerprint and task)")
      ->check(CLI::IsMember({"eager", "eager,compile", "compile"}))
      ->capture_default_str();
  eval->add_flag("--retime-baselines", ev.retime_baselines,
                 "time cached baselines (eager, torch.compile) again: both are cached per machine "
                 "fingerprint, task and seed");
}

/// Adds kbx eval's flags to cmd, bound to f (which must outlive the parse).
void add_eval_flags(CLI::App* eval, EvalFlags& f) {
  add_eval_selection_flags(eval, f);
  add_eval_run_flags(eval, f);
}

/// The options of a parsed kbx eval command line; throws Error on a bad tier, seed or shard.
sched::EvalOptions eval_options(const EvalFlags& f, const fs::path& suite_root) {
  sched::EvalOptions ev = f.ev;
  ev.suite_root = suite_root;
  ev.tasks = split_list(f.tasks);
  ev.work_root = f.work;
  ev.time = !f.no_time;
  ev.compile_baseline = f.baselines.find("compile") != std::string::npos;
  ev.warm = !f.cold;
  ev.tiers = split_list(f.tiers);
  for (const auto& t : ev.tiers) {
    if (t != "edge" && t != "small" && t != "full") throw Error("--tiers: unknown tier " + t);
  }
  if (!f.seed_text.empty()) {
    try {
      ev.seed = std::stoull(f.seed_text);
    } catch (const std::exception&) {
      throw Error("--seed " + f.seed_text + ": expected a whole number");
    }
  }
  if (!f.shard.empty()) ev.shard = dist::parse_shard(f.shard);
  if (ev.jobs < 0) throw Error("--jobs: must be at least 1");
  if (!f.gpus.empty()) {
    ev.gpus = sched::resolve_gpus(f.gpus, sched::visible_devices(), sched::kNvidiaProc);
  }
  return ev;
}

/// `kbx slurm submit`: checks the kbx eval arguments as kbx eval would (a typo fails here, not
/// in N queued jobs), fixes one seed for all shards, then writes (and submits) the scripts.
int slurm_submit_cmd(dist::SlurmOptions so, const std::string& out, const fs::path& suite_root) {
  dist::check_eval_args(so.eval_args);
  CLI::App probe{"kbx eval"};
  EvalFlags f;
  add_eval_flags(&probe, f);
  std::vector<std::string> reversed(so.eval_args.rbegin(), so.eval_args.rend());
  try {
    probe.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw Error(fmt::format("kbx eval arguments after --: {}", e.what()));
  }
  const sched::EvalOptions ev = eval_options(f, suite_root);
  suite::select(suite::load_suite(suite_root), ev.category, ev.tasks);  // unknown tasks fail here
  if (so.gpus_per_task == 0 && ev.device == "cuda") {
    throw Error(
        "--gpus-per-task 0 gives the shards no GPU, but kbx eval's --device is cuda (the "
        "default): add --device cpu after --, or ask for a GPU per task");
  }
  std::string seed;
  if (!ev.seed) {  // one seed for every shard: the same inputs as one run with that seed
    seed = std::to_string(random_seed());
    so.eval_args.insert(so.eval_args.end(), {"--seed", seed});
  }
  so.out = fs::absolute(out).lexically_normal();
  so.workdir = fs::current_path();
  so.suite_root = fs::absolute(suite_root).lexically_normal();
  so.kbx = fs::read_symlink("/proc/self/exe");
  dist::slurm_submit(so);
  if (!seed.empty()) std::fprintf(stderr, "kbx: slurm: every shard uses --seed %s\n", seed.c_str());
  return 0;
}

/// The flags of kbx generate and kbx run: the method config, tasks, database, replay.
struct GenerateFlags {
  gen::GenerateOptions options;
  std::vector<std::string> tasks;
};

void add_generate_flags(CLI::App* cmd, GenerateFlags& f) {
  cmd->add_option("--method-config", f.options.method_config,
                  "the method: methods/NAME.toml (strategy, model endpoint, prompt templates, "
                  "sampling)")
      ->required();
  cmd->add_option("--tasks", f.tasks, "only these tasks (Category/name, comma-separated)");
  cmd->add_option("--category", f.options.category, "only this category");
  cmd->add_option("--db", f.options.db, "results database (exchanges, candidates, verdicts)")
      ->capture_default_str();
  cmd->add_flag("--replay", f.options.replay,
                "answer every request from the exchanges stored in --db, with no network (a "
                "request with no stored reply is an error)");
}

/// `kbx generate` (evaluate empty) and `kbx run` (evaluate judges each round's candidates).
int generate_cmd(GenerateFlags f, const fs::path& suite_root, const gen::Evaluate& evaluate) {
  f.options.suite_root = suite_root;
  f.options.tasks = split_list(f.tasks);
  const gen::GenerateSummary g = gen::generate(f.options, evaluate);
  std::printf("generation session %lld:\n%s", static_cast<long long>(g.session_id),
              gen::summary_table(g).c_str());
  if (g.failed_requests) {
    std::fprintf(stderr, "kbx: %d request(s) got no reply (see above; stored in %s)\n",
                 g.failed_requests, f.options.db.c_str());
    return 1;
  }
  return 0;
}

/// `kbx run`: generation whose every round is judged by kbx eval (the round's new candidates
/// only) before the next round is asked for.
int run_cmd(const GenerateFlags& f, const EvalFlags& ef, const fs::path& suite_root) {
  const gen::MethodConfig method = gen::load_method(f.options.method_config);
  sched::EvalOptions ev = eval_options(ef, suite_root);  // bad flags fail before any request
  ev.method = method.name;
  ev.track = method.track;
  ev.db = f.options.db;
  const gen::Evaluate evaluate = [ev](const std::vector<std::int64_t>& ids) {
    sched::EvalOptions round = ev;
    round.candidate_ids = ids;
    return sched::run_eval(round);
  };
  const int rc = generate_cmd(f, suite_root, evaluate);
  std::printf("verdicts: kbx results --db %s --method %s\n", f.options.db.c_str(),
              method.name.c_str());
  return rc;
}

int merge_cmd(const std::vector<std::string>& inputs, const fs::path& output, bool force) {
  std::vector<fs::path> paths(inputs.begin(), inputs.end());
  const auto m = store::merge_databases(paths, output, force);
  std::printf(
      "merged %d databases into %s: %lld runs (%d found in several inputs, kept once), "
      "%lld candidates, %lld results; kbx results --db %s shows them\n",
      m.inputs, output.c_str(), static_cast<long long>(m.runs), m.shared_runs,
      static_cast<long long>(m.candidates), static_cast<long long>(m.results), output.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"kbx: trusted evaluation of LLM-written GPU kernels (KernelBenchX tasks)"};
  app.require_subcommand(1);
  std::string suite_dir = (kbx_home() / "tasks").string();
  app.add_option("--suite", suite_dir, "folder of tasks (Category/name/task.toml)")
      ->capture_default_str();

  auto* suite_cmd = app.add_subcommand("suite", "list, show and check the tasks");
  suite_cmd->require_subcommand(1);
  std::string category, format = "table", task_id, device = "cpu", python;
  std::vector<std::string> task_list;
  auto* list = suite_cmd->add_subcommand("list", "list tasks");
  list->add_option("--category", category, "only this category");
  list->add_option("--format", format, "table, tsv or json")
      ->check(CLI::IsMember({"table", "tsv", "json"}));
  auto* show = suite_cmd->add_subcommand("show", "show one task's manifest");
  show->add_option("task", task_id, "Category/name")->required();
  auto* check = suite_cmd->add_subcommand(
      "check",
      "check references: they run, are deterministic, depend on their inputs, and "
      "reject all-zeros and identity candidates");
  check->add_option("--device", device, "cpu (edge and small cases) or cuda (all cases)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  check->add_option("--category", category, "only this category");
  check->add_option("--task,--tasks", task_list,
                    "only these tasks (Category/name, repeatable or comma-separated)");
  check->add_option("--python", python, "Python interpreter with torch");

  EvalFlags eval_flags;
  auto* eval = app.add_subcommand("eval", "evaluate a method's candidate kernels");
  add_eval_flags(eval, eval_flags);
  eval->footer(
      "Environment (for experiments and checks; the defaults are the measured ones, "
      "docs/architecture.md says why): KBX_WORK scratch folder; KBX_REF_CACHE reference cache; "
      "KBX_PYTHON the Python with torch; KBX_PROBE_LIB the CUPTI probe (off: CUDA events "
      "only); KBX_SLOT_DIR where the GPUs' timing-slot locks live (/tmp/kbx-gpu-slots); "
      "KBX_QUIET_CPU_FIRST=0 freezes a job from its start, not from its CUDA's; "
      "KBX_BASELINE_SETTLE=0 and KBX_TIMER_SETTLE=0 time without first waiting for other "
      "processes' GPU work to drain (baselines, candidates); KBX_KEEP_QUIET=0 ends a candidate's "
      "quiet host after each timed case (it settles before each); KBX_TIMER_WARMUP_MS the "
      "candidates' timer warm-up (3 ms; the references' eager timing keeps 10); "
      "KBX_TIMER_HOLD_FACTOR their batches' GPU hold in times "
      "the last batch's enqueue (2); KBX_TIMER_KEEP_OUTPUTS=K (1-4) times each call beside up to K "
      "earlier outputs of its batch, candidates and eager baselines alike (an experiment); "
      "KBX_EAGER_REDRAW=0 draws each short eager timing once (default 1: a second draw on inputs "
      "made again, kept when the first was more than 8% slower); "
      "KBX_PRELOAD_COMPILER=1|0 imports torch.compile's modules in "
      "the warm parents or not (default: not; an experiment); KBX_INDUCTOR_THREADS Inductor's "
      "compile workers per job; KBX_DEBUG_TIMING=1 prints each job's timeline; "
      "KBX_SLOT_TRACE=FILE records every use of the timing slot (bench/slot_profile.py reads "
      "both).");

  GenerateFlags generate_flags;
  auto* generate = app.add_subcommand(
      "generate",
      "generate candidate kernels with a model (an OpenAI-compatible chat-completions endpoint) "
      "as a method config says, storing every exchange and candidate in the database");
  add_generate_flags(generate, generate_flags);
  GenerateFlags run_gen_flags;
  EvalFlags run_eval_flags;
  auto* run_sub = app.add_subcommand(
      "run",
      "generate and evaluate in one go: each round's new candidates are judged by kbx eval, and "
      "for refine and parallel methods their verdicts feed the next round");
  add_generate_flags(run_sub, run_gen_flags);
  add_eval_run_flags(run_sub, run_eval_flags);

  auto* import =
      app.add_subcommand("import", "store candidates in the database without running them");
  import->require_subcommand(1);
  std::string import_path, import_method, db_path = "kbx.db";
  for (auto [name, help] :
       {std::pair{"kernelbenchx", "a KernelBenchX JSONL file ({\"file\", \"predict\"} lines)"},
        std::pair{"dir", "a folder of Category/name.py files"}}) {
    auto* sub = import->add_subcommand(name, help);
    sub->add_option("path", import_path, "file or folder")->required();
    sub->add_option("--method", import_method, "method name")->required();
    sub->add_option("--db", db_path, "results database")->capture_default_str();
  }

  auto* results = app.add_subcommand(
      "results",
      "show stored results: per method, the newest verdict of each task across all of its runs "
      "(the run column says which; * marks a verdict from another environment)");
  std::string method;
  std::int64_t run_id = 0;
  results->add_option("--db", db_path, "results database")->capture_default_str();
  results->add_option("--method", method, "only this method");
  results->add_option("--run", run_id, "only this run's results");
  results->add_option("--format", format, "table, csv, json or markdown")
      ->check(CLI::IsMember({"table", "csv", "json", "markdown"}));
  std::string level = "strict";
  results
      ->add_option("--level", level,
                   "the verdict shown as status: strict (every case), core (all but the edge "
                   "tier) or kbx (KernelBenchX's own test scope); all three are always reported")
      ->check(CLI::IsMember({"strict", "core", "kbx"}))
      ->capture_default_str();

  auto* report = app.add_subcommand(
      "report",
      "write a report folder: index.html (self-contained, no network: inline SVG charts of "
      "fast_p, correctness by category, speedups, roofline and refinement rounds), summary.md, "
      "results.csv and results.json");
  std::vector<std::string> report_dbs, report_methods;
  std::string report_out;
  report
      ->add_option("--db", report_dbs,
                   "results database; repeat to combine several (a method and task found in "
                   "several keep the newest verdict; colliding run ids are renumbered)")
      ->required();
  report->add_option("--method", report_methods,
                     "only these methods (repeatable or comma-separated; default: all)");
  report->add_option("--out", report_out, "folder to write (created if missing)")->required();
  auto* analyze = app.add_subcommand(
      "analyze",
      "statistics over one or more results databases, read together: per method and category "
      "rates and speedups, tasks no method solves, refinement over rounds, speedup spread across "
      "GPUs, and a logistic model of correctness by category and method");
  std::vector<std::string> analyze_dbs, analysis_list;
  report::AnalyzeOptions analyze_options;
  std::string fast_p_text = "0,1,1.5,2";
  analyze
      ->add_option("--db", analyze_dbs,
                   "results database; repeat for several (e.g. one per GPU): a kernel's verdict "
                   "on each GPU is its own")
      ->required();
  analyze->add_option("--analysis", analysis_list,
                      "methods, unsolved, refinement, hardware or deviance (repeatable or "
                      "comma-separated; default: all)");
  analyze
      ->add_option("--level", analyze_options.level,
                   "the verdict that counts as correct for speedups, fast_p, unsolved tasks, "
                   "refinement and the model: strict, core or kbx (the methods table shows all "
                   "three rates)")
      ->check(CLI::IsMember({"strict", "core", "kbx"}))
      ->capture_default_str();
  analyze
      ->add_option("--fast-p", fast_p_text,
                   "thresholds p of fast_p, the share of kernels correct with speedup > p "
                   "(comma-separated)")
      ->capture_default_str();
  analyze
      ->add_option("--bootstrap", analyze_options.bootstrap,
                   "replicates for 95% percentile intervals of every rate and geometric mean "
                   "(tasks resampled within each method); 0: no intervals")
      ->capture_default_str();
  analyze->add_option("--seed", analyze_options.seed, "the bootstrap's seed")
      ->capture_default_str();
  std::string analyze_format = "table";
  analyze->add_option("--format", analyze_format, "table, csv, json or markdown")
      ->check(CLI::IsMember({"table", "csv", "json", "markdown"}))
      ->capture_default_str();
  analyze->footer(
      "A kernel is a method's candidate for a task (and its round and sample, from kbx import's "
      "JSONL fields) on one GPU; its newest verdict counts. Rows of harness_error and "
      "reference_error are left out. The model is a binomial GLM (logit), fitted by IRLS with "
      "Eigen. JSON carries schema_version 1.");

  auto* calibrate = app.add_subcommand(
      "calibrate", "measure this GPU's copy bandwidth and matmul rates for roofline fractions");
  std::string calibrate_device = "cuda";
  calibrate->add_option("--device", calibrate_device, "cuda, or cpu (a quick check of the command)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  calibrate->add_option("--db", db_path, "results database")->capture_default_str();
  calibrate->add_option("--python", python, "Python interpreter with torch");

  auto* merge = app.add_subcommand(
      "merge",
      "merge results databases (the shards of kbx eval --shard, or any) into a new one: runs, "
      "candidates, results, samples, attempts, calibrations, baselines, generation sessions "
      "and their exchanges, with ids renumbered; refuses inputs of another schema version and "
      "jobs with different verdicts in two inputs");
  std::vector<std::string> merge_inputs;
  std::string merge_output;
  bool merge_force = false;
  merge->add_option("inputs", merge_inputs, "the databases to merge (A.db B.db ...)")->required();
  merge->add_option("-o,--output", merge_output, "the merged database, a new file")->required();
  merge->add_flag("--force", merge_force, "replace the output if it exists");

  auto* slurm = app.add_subcommand(
      "slurm", "run kbx eval on a Slurm cluster: N shards as one array job, then their merge");
  slurm->require_subcommand(1);
  auto* submit = slurm->add_subcommand(
      "submit",
      "write sbatch scripts for N shards of one kbx eval (array task i runs --shard i/N into "
      "OUT/shard-i.db) and a merge job into OUT/all.db that runs once every shard succeeded; "
      "submit them with sbatch unless --dry-run");
  dist::SlurmOptions slurm_options;
  std::string slurm_out = "kbx-slurm";
  submit->add_option("--shards", slurm_options.shards, "N: shards, one array task each")
      ->required();
  submit->add_option("--partition", slurm_options.partition,
                     "partition of both jobs (default: the cluster's)");
  submit
      ->add_option("--gpus-per-task", slurm_options.gpus_per_task,
                   "GPUs of each array task (--gres=gpu:K); 0 for CPU nodes (with --device cpu "
                   "in the eval arguments)")
      ->capture_default_str();
  submit->add_option("--cpus-per-task", slurm_options.cpus_per_task,
                     "CPUs of each array task (default: the partition's)");
  submit->add_option("--time", slurm_options.time,
                     "time limit of each job, as sbatch takes it (e.g. 4:00:00)");
  submit
      ->add_option("--out", slurm_out,
                   "folder for the scripts, logs/, shard-i.db and all.db (the same folder again "
                   "resumes the shards)")
      ->capture_default_str();
  submit->add_option("--sbatch", slurm_options.extra,
                     "another sbatch option for both jobs, written as --sbatch=--account=NAME "
                     "(repeatable)");
  submit->add_flag("--dry-run", slurm_options.dry_run,
                   "write the scripts and print them and the sbatch commands; submit nothing");
  submit
      ->add_option("eval_args", slurm_options.eval_args,
                   "kbx eval's arguments, after -- (without --db and --shard, which each "
                   "shard gets)")
      ->required();
  submit->footer(
      "Example: kbx slurm submit --shards 8 --partition gpu --time 4:00:00 -- --method mine "
      "--candidates kernels/\n"
      "Writes OUT/shards.sbatch (the array job), OUT/merge.sbatch (kbx merge, after it with "
      "--dependency=afterok) and OUT/submit.sh (both sbatch calls, to run after editing them).");

  auto* doc =
      app.add_subcommand("doctor", "what this machine offers: GPU, driver, torch, triton, sandbox");
  doc->add_option("--python", python, "Python interpreter with torch");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    const fs::path suite_root = suite_dir;
    if (list->parsed()) return suite_list(suite_root, category, format);
    if (show->parsed()) return suite_show(suite_root, task_id);
    if (check->parsed()) {
      sched::CheckOptions co;
      co.suite_root = suite_root;
      co.device = device;
      co.category = category;
      co.tasks = split_list(task_list);
      co.python = python;
      return sched::run_suite_check(co);
    }
    if (eval->parsed()) return sched::run_eval(eval_options(eval_flags, suite_root));
    if (generate->parsed()) return generate_cmd(generate_flags, suite_root, nullptr);
    if (run_sub->parsed()) return run_cmd(run_gen_flags, run_eval_flags, suite_root);
    if (merge->parsed()) return merge_cmd(merge_inputs, merge_output, merge_force);
    if (submit->parsed()) return slurm_submit_cmd(slurm_options, slurm_out, suite_root);
    if (import->parsed()) return sched::run_import(import_path, import_method, db_path, suite_root);
    if (results->parsed()) {
      return results_cmd(db_path, method,
                         run_id ? std::optional<std::int64_t>(run_id) : std::nullopt, format,
                         level);
    }
    if (report->parsed()) return report_cmd(report_dbs, split_list(report_methods), report_out);
    if (analyze->parsed()) {
      analyze_options.analyses = split_list(analysis_list);
      analyze_options.fast_p = parse_fast_p(fast_p_text);
      return analyze_cmd(analyze_dbs, analyze_options, analyze_format);
    }
    if (calibrate->parsed()) return calibrate_cmd(calibrate_device, db_path, python);
    if (doc->parsed()) return doctor(python);
  } catch (const Error& e) {
    std::fprintf(stderr, "kbx: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbx: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}

}  // namespace kbx::cli
