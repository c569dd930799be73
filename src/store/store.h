#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace kbx::store {

/// Version of the database layout; a database of another version is refused with a message.
/// 2 added probe timing and attribution; 3 added graded levels and glue (result_grades,
/// case_grades) and attempts; 4 made the calibration and baselines tables part of the schema
/// (created on open, no longer on first use); 5 added a candidate's refinement round, sample
/// and worker (kbx import), a candidate being one per (method, task, source, round, sample);
/// 6 added generation (gen_sessions, exchanges, gen_costs: store/exchanges.h). Older versions
/// migrate on open.
constexpr int kSchemaVersion = 6;

/// A candidate kernel as imported: its method, task, source and where it came from.
struct Candidate {
  std::int64_t id = 0;
  std::string method;
  std::string task;  ///< "Category/name"
  std::string sha256;
  std::string source;
  std::string origin;  ///< file path or "file.jsonl:line"
  // Where a generating method made it (schema 5; JSONL fields "round", "sample", "worker"):
  std::optional<std::int64_t> round = std::nullopt;   ///< refinement round (a method that
                                                      ///< revises its kernels)
  std::optional<std::int64_t> sample = std::nullopt;  ///< which of several samples for the task
  std::string worker = {};  ///< the generating worker's name, "" when not given
};

/// One evaluation run: the settings that make it repeatable and the machine it ran on.
struct Run {
  std::int64_t id = 0;
  std::string run_key;  ///< hash of method, device, track, tiers and candidate hashes
  std::string method;
  std::string device;
  std::string track;
  std::uint64_t seed = 0;
  std::string started_at;
  std::string finished_at;
  std::string settings_json;
  std::string environment_json;
  std::string kbx_version;
};

/// The verdict of one case of a job.
struct CaseResult {
  std::string name;
  std::string tier;
  std::string status;
  double error_ratio = 0;
  std::string detail;
  std::optional<double> cand_ms, eager_ms;  ///< medians, for timed cases
  std::optional<double> flops, bytes;       ///< the task's cost model
  std::string dtype;                        ///< the case's compute dtype (picks the roofline peak)
  std::string timing_source;                ///< "probe" (CUPTI records) or "events" (CUDA events)
  std::optional<double> cand_event_ms, eager_event_ms;  ///< event medians, when the probe timed
  std::optional<double> kernel_share;  ///< candidate's own kernels' share of timed device time
  std::string timing_flags;            ///< comma-separated timing findings (e.g. unattributed_work)
  std::vector<double> cand_samples, eager_samples;              ///< per call, from timing_source
  std::vector<double> cand_event_samples, eager_event_samples;  ///< CUDA events, cross-check
  std::vector<double> cand_host_samples;  ///< host time per timed call (its launch cost)
  std::optional<double> compile_ms;       ///< the torch.compile baseline's median, when timed
  std::vector<double> compile_samples;    ///< its samples (from the probe when it ran)
  // Graded verdicts and glue (schema 3, table case_grades):
  std::optional<double> glue_share;  ///< copies, casts, fills: share of the timed GPU time
  bool in_kbx = false;               ///< inside KernelBenchX's own test scope (the kbx level)
  bool values_ok = true;             ///< the outputs were right, whatever the track rules said
};

/// A job's verdict at one level of strictness, from its per-case data (docs/task-format.md,
/// "Levels"): strict (every case), core (every case but the edge tier), kbx (the cases inside
/// KernelBenchX's own test scope).
struct LevelVerdict {
  std::string status;      ///< as Result::status: "passed" or the first failing case's status
  bool values_ok = false;  ///< every case of the level had correct outputs (track rules aside):
                           ///< how the job fares under --track any
};

/// The verdict of one job (a candidate on its task in a run).
struct Result {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  std::int64_t candidate_id = 0;
  std::string method;
  std::string task;
  std::string category;
  std::string status;
  std::string detail;
  double error_ratio = 0;
  int cases_total = 0;
  int cases_passed = 0;
  std::optional<double> speedup;  ///< geometric mean over performance cases
  int triton_launches = 0;
  double wall_s = 0;
  double overhead_s = 0;               ///< wall time minus import, first calls and timing
  std::optional<double> kernel_share;  ///< lowest kernel share over the timed cases
  /// How its run ran candidates: "confined", "unisolated" (--allow-unisolated) or
  /// "unrecorded" (runs made before kbx recorded it).
  std::string isolation;
  // Graded verdicts and glue (schema 3, table result_grades):
  LevelVerdict strict, core, kbx;    ///< the job at each level; strict.status == status
  std::optional<double> glue_share;  ///< highest glue share over the timed cases
  std::uint64_t stdout_bytes = 0;
  std::string created_at;
  std::vector<CaseResult> cases;
};

/// The results database. Every write that finishes a job is one transaction, so a killed
/// kbx loses at most the job in flight.
class Store {
 public:
  explicit Store(const std::filesystem::path& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  /// Adds a candidate (deduplicated by method, task, hash, round and sample); returns its id.
  std::int64_t add_candidate(const Candidate& c);
  /// The newest candidate of a method for each task (for each task, round and sample when the
  /// candidates have them), ordered by task, round and sample.
  std::vector<Candidate> latest_candidates(const std::string& method);

  /// The stored candidates with these ids, ordered by task, round and sample; throws Error
  /// naming an id that is not stored.
  std::vector<Candidate> candidates_by_id(const std::vector<std::int64_t>& ids);

  /// The newest unfinished-or-finished run with this key, if any.
  std::optional<Run> find_run(const std::string& run_key);
  std::int64_t add_run(const Run& run);
  void finish_run(std::int64_t run_id);
  void set_run_environment(std::int64_t run_id, const std::string& environment_json);
  std::vector<Run> runs();

  /// True when the job has a verdict; a harness_error row is no verdict (the job runs again).
  bool has_result(std::int64_t run_id, std::int64_t candidate_id);
  /// Stores a job's verdict in one transaction, replacing a harness_error row of the same job.
  /// A job that already has a verdict keeps it: returns 0 and stores nothing.
  std::int64_t add_result(const Result& r);

  /// Records that a job is about to run (before its worker starts); returns the attempt's id.
  std::int64_t begin_attempt(std::int64_t run_id, std::int64_t candidate_id);
  /// Closes an attempt: "verdict" (its result is stored), "retry" (a harness fault, run again),
  /// "oom_beside" (out of memory beside other jobs, run again alone), "contended_beside" (a timed
  /// case met another process's GPU work, run again alone), "starved_beside" (its process ran
  /// out of the GPU's memory before a timing ended, run again alone) or "warm_parent_died" (the
  /// warm parent died while it ran; a strike).
  void end_attempt(std::int64_t attempt_id, const std::string& outcome);
  /// How many of a run's attempts ended with each outcome (open attempts left out).
  std::map<std::string, int> attempt_outcomes(std::int64_t run_id);
  /// Closes this process's open attempts of a run as "interrupted" (a user's or a batch system's
  /// signal ended kbx: no strike against the jobs).
  void interrupt_attempts(std::int64_t run_id);
  /// Strikes against a job: attempts that never ended (kbx died while it ran) plus attempts during
  /// which the warm parent died.
  int strikes(std::int64_t run_id, std::int64_t candidate_id);
  /// A method's results are all of its runs: the newest verdict of each (method, task) across
  /// every run (or the results of run_id alone when given), ordered by method and task.
  std::vector<Result> results(const std::string& method, std::optional<std::int64_t> run_id);

  sqlite3* handle() { return db_; }

 private:
  void exec(const std::string& sql);
  /// Brings a database of an earlier schema version (its meta value; "" when new) to this one.
  void migrate(std::string version);
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace kbx::store
