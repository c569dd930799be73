#include "store/store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>

#include "common/error.h"
#include "common/util.h"
#include "store/statement.h"

namespace kbx::store {
namespace {

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS candidates(
  id INTEGER PRIMARY KEY, method TEXT NOT NULL, task TEXT NOT NULL, sha256 TEXT NOT NULL,
  round INTEGER, sample INTEGER, worker TEXT, source TEXT NOT NULL, origin TEXT,
  imported_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY, run_key TEXT NOT NULL, method TEXT NOT NULL, device TEXT NOT NULL,
  track TEXT NOT NULL, seed INTEGER NOT NULL, started_at TEXT NOT NULL, finished_at TEXT,
  settings TEXT, environment TEXT, kbx_version TEXT);
CREATE INDEX IF NOT EXISTS runs_key ON runs(run_key);
CREATE TABLE IF NOT EXISTS results(
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
  candidate_id INTEGER NOT NULL REFERENCES candidates(id), method TEXT NOT NULL,
  task TEXT NOT NULL, category TEXT NOT NULL, status TEXT NOT NULL, detail TEXT,
  error_ratio REAL, cases_total INTEGER, cases_passed INTEGER, speedup REAL,
  triton_launches INTEGER, wall_s REAL, overhead_s REAL, stdout_bytes INTEGER,
  created_at TEXT NOT NULL, kernel_share REAL, UNIQUE(run_id, candidate_id));
CREATE TABLE IF NOT EXISTS case_results(
  result_id INTEGER NOT NULL REFERENCES results(id), name TEXT NOT NULL, tier TEXT,
  status TEXT NOT NULL, error_ratio REAL, detail TEXT, cand_ms REAL, eager_ms REAL,
  flops REAL, bytes REAL, dtype TEXT, timing_source TEXT, cand_event_ms REAL,
  eager_event_ms REAL, kernel_share REAL, timing_flags TEXT, compile_ms REAL,
  PRIMARY KEY(result_id, name));
CREATE TABLE IF NOT EXISTS samples(
  result_id INTEGER NOT NULL REFERENCES results(id), case_name TEXT NOT NULL,
  who TEXT NOT NULL, idx INTEGER NOT NULL, ms REAL NOT NULL);
CREATE TABLE IF NOT EXISTS attempts(
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
  candidate_id INTEGER NOT NULL REFERENCES candidates(id), started_at TEXT NOT NULL,
  pid INTEGER NOT NULL, ended_at TEXT, outcome TEXT);
CREATE INDEX IF NOT EXISTS attempts_job ON attempts(run_id, candidate_id);
)sql";

// ---- schema 3 (issue 13): graded levels and glue, in tables of their own -------------------
/// One row per job: its status and whether its values were right at each level
/// (strict, core, kbx), and its highest glue share; one row per case: its glue share, its
/// scope and whether its values were right. Created by every kbx of schema 3 and later.
const char* kGradesSchema = R"sql(
CREATE TABLE IF NOT EXISTS result_grades(
  result_id INTEGER PRIMARY KEY REFERENCES results(id),
  strict TEXT NOT NULL, core TEXT NOT NULL, kbx TEXT NOT NULL,
  strict_values INTEGER NOT NULL, core_values INTEGER NOT NULL, kbx_values INTEGER NOT NULL,
  glue_share REAL);
CREATE TABLE IF NOT EXISTS case_grades(
  result_id INTEGER NOT NULL REFERENCES results(id), name TEXT NOT NULL,
  in_kbx INTEGER NOT NULL, values_ok INTEGER NOT NULL, glue_share REAL,
  PRIMARY KEY(result_id, name));
)sql";
/// Schema 2 to 3: the grades tables (created by kGradesSchema) and the attempts table (created
/// by kSchema); results stored before have no grades, and read back with every level equal to
/// their status.
const char* kV2ToV3 = "UPDATE meta SET value='3' WHERE key='schema_version';";
// ---- end of schema 3 ---------------------------------------------------------------------

// ---- schema 4 (issue 12): the timing references, created with the rest ---------------------
/// `kbx calibrate`'s peaks (store/calibration.h) and the cached baselines' samples
/// (store/baselines.h). Before schema 4 each was created on its first write, outside the
/// versioned schema; a database of schema 3 may hold them already, and keeps their rows.
const char* kReferencesSchema = R"sql(
CREATE TABLE IF NOT EXISTS calibration(
  id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, device TEXT NOT NULL, gpu TEXT,
  measured_at TEXT NOT NULL, peaks TEXT NOT NULL, environment TEXT);
CREATE INDEX IF NOT EXISTS calibration_fingerprint ON calibration(fingerprint);
CREATE TABLE IF NOT EXISTS baselines(
  fingerprint TEXT NOT NULL, task TEXT NOT NULL, task_hash TEXT NOT NULL, kind TEXT NOT NULL,
  case_name TEXT NOT NULL, samples TEXT NOT NULL, measured_at TEXT NOT NULL,
  PRIMARY KEY(fingerprint, task_hash, kind, case_name));
)sql";
/// Schema 3 to 4: the calibration and baselines tables (created by kReferencesSchema, kept as
/// they are when a schema-3 kbx had created them).
const char* kV3ToV4 = "UPDATE meta SET value='4' WHERE key='schema_version';";
// ---- end of schema 4 ---------------------------------------------------------------------

// ---- schema 5 (issue 15): a candidate's round, sample and worker ----------------------------
/// A candidate is one per (method, task, source, round, sample): the same source given as two
/// samples (or rounds) is two candidates. The short columns come before the source, so that
/// reading them does not walk a long source's overflow pages. Schemas 1 to 4 had UNIQUE(method,
/// task, sha256) in the table itself, which SQLite cannot drop, so the table is rebuilt (its ids
/// kept: results and attempts refer to them). Run with foreign keys off (a DROP of a referenced
/// table deletes).
const char* kV4ToV5 = R"sql(
CREATE TABLE candidates_v5(
  id INTEGER PRIMARY KEY, method TEXT NOT NULL, task TEXT NOT NULL, sha256 TEXT NOT NULL,
  round INTEGER, sample INTEGER, worker TEXT, source TEXT NOT NULL, origin TEXT,
  imported_at TEXT NOT NULL);
INSERT INTO candidates_v5(id, method, task, sha256, source, origin, imported_at)
  SELECT id, method, task, sha256, source, origin, imported_at FROM candidates;
DROP TABLE candidates;
ALTER TABLE candidates_v5 RENAME TO candidates;
UPDATE meta SET value='5' WHERE key='schema_version';
)sql";
/// The candidates' identity (a NULL round or sample is one value here, unlike in UNIQUE).
const char* kCandidateKey =
    "CREATE UNIQUE INDEX IF NOT EXISTS candidates_key ON candidates(method, task, sha256, "
    "IFNULL(round, -1), IFNULL(sample, -1));";
// ---- end of schema 5 ---------------------------------------------------------------------

// ---- schema 6 (issue 16): generation ------------------------------------------------------
/// `kbx generate` / `kbx run` (src/gen): a generation session (one command: its method config,
/// model and strategy), every exchange with the model (request and response bodies as sent and
/// received, never a header: the API key is not stored; status, timing, attempts, error, tokens,
/// cost, the candidate it gave or why none), and each task's cost in a session.
/// An exchange's place is (method, task, round, worker, sample, turn): what --replay looks up.
const char* kGenSchema = R"sql(
CREATE TABLE IF NOT EXISTS gen_sessions(
  id INTEGER PRIMARY KEY, method TEXT NOT NULL, strategy TEXT NOT NULL, model TEXT NOT NULL,
  base_url TEXT NOT NULL, config_path TEXT, config TEXT NOT NULL, replay INTEGER NOT NULL,
  started_at TEXT NOT NULL, finished_at TEXT, summary TEXT);
CREATE TABLE IF NOT EXISTS exchanges(
  id INTEGER PRIMARY KEY, session_id INTEGER NOT NULL REFERENCES gen_sessions(id),
  method TEXT NOT NULL, task TEXT NOT NULL, round INTEGER, worker TEXT, sample INTEGER,
  turn INTEGER NOT NULL, kind TEXT NOT NULL, request_sha256 TEXT NOT NULL, request TEXT NOT NULL,
  response TEXT, http_status INTEGER, attempts INTEGER NOT NULL, error TEXT, started_at TEXT NOT NULL,
  wall_s REAL, streamed INTEGER NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER,
  cost REAL, candidate_id INTEGER REFERENCES candidates(id), no_candidate TEXT,
  replayed_from INTEGER REFERENCES exchanges(id));
CREATE INDEX IF NOT EXISTS exchanges_place ON exchanges(method, task, round, worker, sample, turn);
CREATE TABLE IF NOT EXISTS gen_costs(
  session_id INTEGER NOT NULL REFERENCES gen_sessions(id), task TEXT NOT NULL,
  requests INTEGER NOT NULL, failed_requests INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL, cost REAL NOT NULL, wall_s REAL NOT NULL,
  candidates INTEGER NOT NULL, correct INTEGER NOT NULL, tokens_per_correct REAL,
  PRIMARY KEY(session_id, task));
)sql";
/// Schema 5 to 6: the generation tables (created by kGenSchema).
const char* kV5ToV6 = "UPDATE meta SET value='6' WHERE key='schema_version';";
// ---- end of schema 6 ---------------------------------------------------------------------

/// Columns schema version 2 added to version 1's tables (the probe's timing and attribution).
const char* kV1ToV2 = R"sql(
ALTER TABLE results ADD COLUMN kernel_share REAL;
ALTER TABLE case_results ADD COLUMN dtype TEXT;
ALTER TABLE case_results ADD COLUMN timing_source TEXT;
ALTER TABLE case_results ADD COLUMN cand_event_ms REAL;
ALTER TABLE case_results ADD COLUMN eager_event_ms REAL;
ALTER TABLE case_results ADD COLUMN kernel_share REAL;
ALTER TABLE case_results ADD COLUMN timing_flags TEXT;
ALTER TABLE case_results ADD COLUMN compile_ms REAL;
UPDATE meta SET value='2' WHERE key='schema_version';
)sql";

Run read_run(const Stmt& s) {
  Run r;
  r.id = s.integer(0);
  r.run_key = s.text(1);
  r.method = s.text(2);
  r.device = s.text(3);
  r.track = s.text(4);
  r.seed = static_cast<std::uint64_t>(s.integer(5));
  r.started_at = s.text(6);
  r.finished_at = s.text(7);
  r.settings_json = s.text(8);
  r.environment_json = s.text(9);
  r.kbx_version = s.text(10);
  return r;
}

/// A result's levels and glue from the schema-3 tables; a result stored before them gets its
/// status at every level.
void read_grades(sqlite3* db, Result& r) {
  r.strict = r.core = r.kbx = {r.status, r.status == "passed"};
  Stmt g(db,
         "SELECT strict, core, kbx, strict_values, core_values, kbx_values, glue_share "
         "FROM result_grades WHERE result_id=?");
  g.bind(1, r.id);
  if (g.step()) {
    r.strict = {g.text(0), g.integer(3) != 0};
    r.core = {g.text(1), g.integer(4) != 0};
    r.kbx = {g.text(2), g.integer(5) != 0};
    r.glue_share = g.opt_real(6);
  }
  Stmt c(db, "SELECT name, in_kbx, values_ok, glue_share FROM case_grades WHERE result_id=?");
  c.bind(1, r.id);
  while (c.step()) {
    const std::string name = c.text(0);
    for (auto& k : r.cases) {
      if (k.name != name) continue;
      k.in_kbx = c.integer(1) != 0;
      k.values_ok = c.integer(2) != 0;
      k.glue_share = c.opt_real(3);
    }
  }
}

/// A case's series of timing samples, by their `who` in the samples table (written and read by
/// the same names; a name not here is read as the candidate's).
constexpr std::pair<const char*, std::vector<double> CaseResult::*> kSampleSeries[] = {
    {"candidate", &CaseResult::cand_samples},
    {"eager", &CaseResult::eager_samples},
    {"candidate_events", &CaseResult::cand_event_samples},
    {"eager_events", &CaseResult::eager_event_samples},
    {"candidate_host", &CaseResult::cand_host_samples},
    {"compile", &CaseResult::compile_samples}};

constexpr const char* kRunColumns =
    "id, run_key, method, device, track, seed, started_at, finished_at, settings, environment, "
    "kbx_version";

}  // namespace

Store::Store(const std::filesystem::path& path) : path_(path.string()) {
  if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error(path_ + ": cannot open database: " + msg);
  }
  sqlite3_busy_timeout(db_, 10000);
  exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
  std::string version;
  {
    exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);");
    Stmt get(db_, "SELECT value FROM meta WHERE key='schema_version'");
    if (get.step()) version = get.text(0);
  }
  migrate(version);
  exec(kSchema);
  exec(kGradesSchema);
  exec(kReferencesSchema);
  exec(kCandidateKey);
  exec(kGenSchema);
  Stmt get(db_, "SELECT value FROM meta WHERE key='schema_version'");
  if (get.step()) {
    if (get.text(0) != std::to_string(kSchemaVersion)) {
      throw Error(path_ + ": database schema version " + get.text(0) + ", this kbx reads " +
                  std::to_string(kSchemaVersion) + " (use another --db file)");
    }
  } else {
    Stmt put(db_, "INSERT INTO meta(key, value) VALUES('schema_version', ?)");
    put.bind(1, std::to_string(kSchemaVersion)).step();
  }
}

void Store::migrate(std::string version) {
  if (version == "1") {  // a database of an earlier kbx: add the columns it lacks
    exec(std::string("BEGIN IMMEDIATE;") + kV1ToV2 + "COMMIT;");
    version = "2";
  }
  if (version == "2") {
    exec(std::string("BEGIN IMMEDIATE;") + kSchema + kGradesSchema + kV2ToV3 + "COMMIT;");
    version = "3";
  }
  if (version == "3") {
    exec(std::string("BEGIN IMMEDIATE;") + kReferencesSchema + kV3ToV4 + "COMMIT;");
    version = "4";
  }
  if (version == "4") {
    exec("PRAGMA foreign_keys=OFF;");
    exec(std::string("BEGIN IMMEDIATE;") + kV4ToV5 + "COMMIT;");
    exec("PRAGMA foreign_keys=ON;");
    version = "5";
  }
  if (version == "5") {
    exec(std::string("BEGIN IMMEDIATE;") + kGenSchema + kV5ToV6 + "COMMIT;");
  }
}

Store::~Store() {
  sqlite3_close(db_);
}

void Store::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error(path_ + ": " + msg);
  }
}

std::int64_t Store::add_candidate(const Candidate& c) {
  // INSERT OR IGNORE, then the id: safe when another process adds the same candidate meanwhile.
  Stmt ins(db_,
           "INSERT OR IGNORE INTO candidates(method, task, sha256, source, origin, imported_at, "
           "round, sample, worker) VALUES(?,?,?,?,?,?,?,?,?)");
  ins.bind(1, c.method).bind(2, c.task).bind(3, c.sha256).bind(4, c.source).bind(5, c.origin);
  ins.bind(6, utc_now_iso()).bind(7, c.round).bind(8, c.sample);
  if (!c.worker.empty()) ins.bind(9, c.worker);
  ins.step();
  Stmt find(db_,
            "SELECT id FROM candidates WHERE method=? AND task=? AND sha256=? AND round IS ? AND "
            "sample IS ?");
  find.bind(1, c.method).bind(2, c.task).bind(3, c.sha256).bind(4, c.round).bind(5, c.sample);
  if (!find.step()) throw Error(path_ + ": candidate " + c.task + " vanished after insert");
  return find.integer(0);
}

namespace {

Candidate read_candidate(const Stmt& s) {
  Candidate c{s.integer(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5)};
  c.round = s.opt_integer(6);
  c.sample = s.opt_integer(7);
  c.worker = s.text(8);
  return c;
}

}  // namespace

std::vector<Candidate> Store::candidates_by_id(const std::vector<std::int64_t>& ids) {
  Stmt s(db_,
         "SELECT id, method, task, sha256, source, origin, round, sample, worker FROM candidates "
         "WHERE id=?");
  std::vector<Candidate> out;
  for (std::int64_t id : ids) {
    s.reset();
    s.bind(1, id);
    if (!s.step()) throw Error(path_ + ": no candidate with id " + std::to_string(id));
    out.push_back(read_candidate(s));
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.task, a.round, a.sample, a.id) < std::tie(b.task, b.round, b.sample, b.id);
  });
  return out;
}

std::vector<Candidate> Store::latest_candidates(const std::string& method) {
  Stmt s(db_,
         "SELECT id, method, task, sha256, source, origin, round, sample, worker FROM candidates c "
         "WHERE method=? AND id = (SELECT MAX(id) FROM candidates d WHERE d.method=c.method AND "
         "d.task=c.task AND d.round IS c.round AND d.sample IS c.sample) "
         "ORDER BY task, round, sample");
  s.bind(1, method);
  std::vector<Candidate> out;
  while (s.step()) out.push_back(read_candidate(s));
  return out;
}

std::optional<Run> Store::find_run(const std::string& run_key) {
  Stmt s(db_, (std::string("SELECT ") + kRunColumns +
               " FROM runs WHERE run_key=? ORDER BY id DESC LIMIT 1")
                  .c_str());
  s.bind(1, run_key);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

std::int64_t Store::add_run(const Run& r) {
  Stmt s(db_,
         "INSERT INTO runs(run_key, method, device, track, seed, started_at, settings, "
         "environment, kbx_version) VALUES(?,?,?,?,?,?,?,?,?)");
  s.bind(1, r.run_key).bind(2, r.method).bind(3, r.device).bind(4, r.track);
  s.bind(5, static_cast<std::int64_t>(r.seed)).bind(6, utc_now_iso()).bind(7, r.settings_json);
  s.bind(8, r.environment_json).bind(9, r.kbx_version).step();
  return sqlite3_last_insert_rowid(db_);
}

void Store::finish_run(std::int64_t run_id) {
  Stmt s(db_, "UPDATE runs SET finished_at=? WHERE id=?");
  s.bind(1, utc_now_iso()).bind(2, run_id).step();
}

void Store::set_run_environment(std::int64_t run_id, const std::string& environment_json) {
  Stmt s(db_, "UPDATE runs SET environment=? WHERE id=?");
  s.bind(1, environment_json).bind(2, run_id).step();
}

std::vector<Run> Store::runs() {
  Stmt s(db_, (std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY id").c_str());
  std::vector<Run> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

bool Store::has_result(std::int64_t run_id, std::int64_t candidate_id) {
  Stmt s(db_,
         "SELECT 1 FROM results WHERE run_id=? AND candidate_id=? AND status<>'harness_error'");
  s.bind(1, run_id).bind(2, candidate_id);
  return s.step();
}

std::int64_t Store::add_result(const Result& r) {
  exec("BEGIN IMMEDIATE");
  try {
    Stmt old(db_, "SELECT id, status FROM results WHERE run_id=? AND candidate_id=?");
    old.bind(1, r.run_id).bind(2, r.candidate_id);
    if (old.step()) {
      if (old.text(1) != "harness_error") {  // the job has its verdict: one per job, kept
        exec("ROLLBACK");
        return 0;
      }
      const std::int64_t old_id = old.integer(0);
      for (const char* sql :
           {"DELETE FROM samples WHERE result_id=?", "DELETE FROM case_results WHERE result_id=?",
            "DELETE FROM case_grades WHERE result_id=?",
            "DELETE FROM result_grades WHERE result_id=?", "DELETE FROM results WHERE id=?"}) {
        Stmt del(db_, sql);
        del.bind(1, old_id).step();
      }
    }
    Stmt s(db_,
           "INSERT INTO results(run_id, candidate_id, method, task, category, status, detail, "
           "error_ratio, cases_total, cases_passed, speedup, triton_launches, wall_s, overhead_s, "
           "stdout_bytes, created_at, kernel_share) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    s.bind(1, r.run_id).bind(2, r.candidate_id).bind(3, r.method).bind(4, r.task);
    s.bind(5, r.category).bind(6, r.status).bind(7, r.detail).bind(8, r.error_ratio);
    s.bind(9, static_cast<std::int64_t>(r.cases_total));
    s.bind(10, static_cast<std::int64_t>(r.cases_passed)).bind(11, r.speedup);
    s.bind(12, static_cast<std::int64_t>(r.triton_launches)).bind(13, r.wall_s);
    s.bind(14, r.overhead_s).bind(15, static_cast<std::int64_t>(r.stdout_bytes));
    s.bind(16, utc_now_iso()).bind(17, r.kernel_share).step();
    const std::int64_t id = sqlite3_last_insert_rowid(db_);
    {
      Stmt g(db_,
             "INSERT INTO result_grades(result_id, strict, core, kbx, strict_values, "
             "core_values, kbx_values, glue_share) VALUES(?,?,?,?,?,?,?,?)");
      auto level = [](const LevelVerdict& l, const std::string& status) {
        return l.status.empty() ? status : l.status;
      };
      g.bind(1, id).bind(2, level(r.strict, r.status)).bind(3, level(r.core, r.status));
      g.bind(4, level(r.kbx, r.status)).bind(5, static_cast<std::int64_t>(r.strict.values_ok));
      g.bind(6, static_cast<std::int64_t>(r.core.values_ok));
      g.bind(7, static_cast<std::int64_t>(r.kbx.values_ok)).bind(8, r.glue_share).step();
    }
    Stmt c(db_,
           "INSERT INTO case_results(result_id, name, tier, status, error_ratio, detail, cand_ms, "
           "eager_ms, flops, bytes, dtype, timing_source, cand_event_ms, eager_event_ms, "
           "kernel_share, timing_flags, compile_ms) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    Stmt smp(db_, "INSERT INTO samples(result_id, case_name, who, idx, ms) VALUES(?,?,?,?,?)");
    for (const auto& k : r.cases) {
      c.reset();
      c.bind(1, id).bind(2, k.name).bind(3, k.tier).bind(4, k.status).bind(5, k.error_ratio);
      c.bind(6, k.detail).bind(7, k.cand_ms).bind(8, k.eager_ms).bind(9, k.flops);
      c.bind(10, k.bytes).bind(11, k.dtype).bind(12, k.timing_source).bind(13, k.cand_event_ms);
      c.bind(14, k.eager_event_ms).bind(15, k.kernel_share).bind(16, k.timing_flags);
      c.bind(17, k.compile_ms).step();
      Stmt g(db_,
             "INSERT INTO case_grades(result_id, name, in_kbx, values_ok, glue_share) "
             "VALUES(?,?,?,?,?)");
      g.bind(1, id).bind(2, k.name).bind(3, static_cast<std::int64_t>(k.in_kbx));
      g.bind(4, static_cast<std::int64_t>(k.values_ok)).bind(5, k.glue_share).step();
      for (const auto& [who, series] : kSampleSeries) {
        const std::vector<double>& samples = k.*series;
        for (size_t i = 0; i < samples.size(); ++i) {
          smp.reset();
          smp.bind(1, id).bind(2, k.name).bind(3, std::string(who));
          smp.bind(4, static_cast<std::int64_t>(i)).bind(5, samples[i]).step();
        }
      }
    }
    exec("COMMIT");
    return id;
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

std::int64_t Store::begin_attempt(std::int64_t run_id, std::int64_t candidate_id) {
  Stmt s(db_, "INSERT INTO attempts(run_id, candidate_id, started_at, pid) VALUES(?,?,?,?)");
  s.bind(1, run_id).bind(2, candidate_id).bind(3, utc_now_iso());
  s.bind(4, static_cast<std::int64_t>(getpid())).step();
  return sqlite3_last_insert_rowid(db_);
}

void Store::end_attempt(std::int64_t attempt_id, const std::string& outcome) {
  Stmt s(db_, "UPDATE attempts SET ended_at=?, outcome=? WHERE id=?");
  s.bind(1, utc_now_iso()).bind(2, outcome).bind(3, attempt_id).step();
}

void Store::interrupt_attempts(std::int64_t run_id) {
  Stmt s(db_,
         "UPDATE attempts SET ended_at=?, outcome='interrupted' WHERE run_id=? AND pid=? AND "
         "outcome IS NULL");
  s.bind(1, utc_now_iso()).bind(2, run_id).bind(3, static_cast<std::int64_t>(getpid())).step();
}

std::map<std::string, int> Store::attempt_outcomes(std::int64_t run_id) {
  Stmt s(db_,
         "SELECT outcome, COUNT(*) FROM attempts WHERE run_id=? AND outcome IS NOT NULL "
         "GROUP BY outcome");
  s.bind(1, run_id);
  std::map<std::string, int> counts;
  while (s.step()) counts[s.text(0)] = static_cast<int>(s.integer(1));
  return counts;
}

int Store::strikes(std::int64_t run_id, std::int64_t candidate_id) {
  Stmt s(db_,
         "SELECT COUNT(*) FROM attempts WHERE run_id=? AND candidate_id=? AND "
         "(outcome IS NULL OR outcome='warm_parent_died')");
  s.bind(1, run_id).bind(2, candidate_id);
  return s.step() ? static_cast<int>(s.integer(0)) : 0;
}

namespace {

/// "confined", "unisolated", or "unrecorded" for runs older than the setting.
std::string isolation_of(const std::string& settings_json) {
  try {
    return nlohmann::json::parse(settings_json).value("isolation", "unrecorded");
  } catch (const std::exception&) {
    return "unrecorded";
  }
}

/// Fills the timing samples of `results` (their cases read already) in one pass over the
/// samples table, which has no index on result_id: a query per result scanned the whole table
/// each time, O(results x samples) (kbx results over 184 results and 84 thousand samples: 0.75 s;
/// a database of a few methods and runs, hours).
void read_samples(sqlite3* db, std::vector<Result>& results) {
  std::unordered_map<std::int64_t, Result*> by_id;
  for (auto& r : results) by_id[r.id] = &r;
  Stmt smp(db,
           "SELECT result_id, case_name, who, ms FROM samples "
           "ORDER BY result_id, case_name, who, idx");
  while (smp.step()) {
    const auto found = by_id.find(smp.integer(0));
    if (found == by_id.end()) continue;  // a result not asked for
    Result& r = *found->second;
    const std::string name = smp.text(1);
    auto it = std::find_if(r.cases.begin(), r.cases.end(),
                           [&](const CaseResult& k) { return k.name == name; });
    if (it == r.cases.end()) continue;
    const std::string who = smp.text(2);
    std::vector<double> CaseResult::*dest = &CaseResult::cand_samples;
    for (const auto& [series_who, series] : kSampleSeries) {
      if (who == series_who) dest = series;
    }
    ((*it).*dest).push_back(smp.real(3));
  }
}

}  // namespace

std::vector<Result> Store::results(const std::string& method, std::optional<std::int64_t> run_id) {
  std::string sql =
      "SELECT r.id, r.run_id, r.candidate_id, r.method, r.task, r.category, r.status, r.detail, "
      "r.error_ratio, r.cases_total, r.cases_passed, r.speedup, r.triton_launches, r.wall_s, "
      "r.overhead_s, r.stdout_bytes, r.created_at, r.kernel_share, "
      "(SELECT u.settings FROM runs u WHERE u.id = r.run_id) FROM ";
  if (run_id) {
    sql += "results r WHERE r.run_id = ?1";
  } else {
    // a method's results are all of its runs: the newest verdict of each of its tasks
    sql +=
        "(SELECT q.*, ROW_NUMBER() OVER (PARTITION BY q.method, q.task "
        "ORDER BY q.run_id DESC, q.id DESC) AS newest FROM results q "
        "WHERE ?1 = '' OR q.method = ?1) r WHERE r.newest = 1";
  }
  sql += " ORDER BY r.method, r.task";
  Stmt s(db_, sql.c_str());
  if (run_id) {
    s.bind(1, *run_id);
  } else {
    s.bind(1, method);
  }
  std::vector<Result> out;
  while (s.step()) {
    Result r;
    r.id = s.integer(0);
    r.run_id = s.integer(1);
    r.candidate_id = s.integer(2);
    r.method = s.text(3);
    r.task = s.text(4);
    r.category = s.text(5);
    r.status = s.text(6);
    r.detail = s.text(7);
    r.error_ratio = s.real(8);
    r.cases_total = static_cast<int>(s.integer(9));
    r.cases_passed = static_cast<int>(s.integer(10));
    r.speedup = s.opt_real(11);
    r.triton_launches = static_cast<int>(s.integer(12));
    r.wall_s = s.real(13);
    r.overhead_s = s.real(14);
    r.stdout_bytes = static_cast<std::uint64_t>(s.integer(15));
    r.created_at = s.text(16);
    r.kernel_share = s.opt_real(17);
    r.isolation = isolation_of(s.text(18));
    out.push_back(std::move(r));
  }
  for (auto& r : out) {
    Stmt c(db_,
           "SELECT name, tier, status, error_ratio, detail, cand_ms, eager_ms, flops, bytes, "
           "dtype, timing_source, cand_event_ms, eager_event_ms, kernel_share, timing_flags, "
           "compile_ms FROM case_results WHERE result_id=? ORDER BY rowid");
    c.bind(1, r.id);
    while (c.step()) {
      CaseResult k;
      k.name = c.text(0);
      k.tier = c.text(1);
      k.status = c.text(2);
      k.error_ratio = c.real(3);
      k.detail = c.text(4);
      k.cand_ms = c.opt_real(5);
      k.eager_ms = c.opt_real(6);
      k.flops = c.opt_real(7);
      k.bytes = c.opt_real(8);
      k.dtype = c.text(9);
      k.timing_source = c.text(10);
      k.cand_event_ms = c.opt_real(11);
      k.eager_event_ms = c.opt_real(12);
      k.kernel_share = c.opt_real(13);
      k.timing_flags = c.text(14);
      k.compile_ms = c.opt_real(15);
      r.cases.push_back(std::move(k));
    }
    read_grades(db_, r);
  }
  read_samples(db_, out);
  return out;
}

}  // namespace kbx::store
