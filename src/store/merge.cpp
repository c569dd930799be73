#include "store/merge.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "common/error.h"
#include "store/lock.h"
#include "store/statement.h"
#include "store/store.h"

namespace kbx::store {
namespace fs = std::filesystem;

namespace {

/// Every table of the schema that merge knows; a table missing here stops the merge, so that a
/// schema change must say how its new table merges.
const std::set<std::string> kKnownTables = {
    "meta",      "candidates",   "runs",          "results",     "case_results",
    "samples",   "attempts",     "result_grades", "case_grades", "calibration",
    "baselines", "gen_sessions", "exchanges",     "gen_costs"};

/// Tables whose rows hang off a result (result_id), copied with their result.
const char* const kResultChildren[] = {"case_results", "samples", "result_grades", "case_grades"};

/// One run of an input, and what makes it the same run as another input's: key, start and seed.
struct InputRun {
  std::int64_t id = 0;
  std::string key, started_at, shard;
  std::int64_t seed = 0;
  std::string identity() const { return key + '\x1f' + started_at + '\x1f' + std::to_string(seed); }
};

/// An input database, checked, with its runs and the lock that keeps kbx eval out meanwhile.
struct Input {
  fs::path path;
  std::vector<InputRun> runs;
  std::optional<WriterLock> lock;
};

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error("merge: " + msg + " in: " + sql);
  }
}

std::int64_t count(sqlite3* db, const std::string& sql) {
  Stmt s(db, sql);
  return s.step() ? s.integer(0) : 0;
}

/// Throws Error naming the file unless it is a kbx database of this kbx's schema version.
void check_version(sqlite3* db, const fs::path& path) {
  std::string version;
  try {
    Stmt get(db, "SELECT value FROM meta WHERE key='schema_version'");
    if (get.step()) version = get.text(0);
  } catch (const Error&) {  // no meta table, or not an SQLite file at all
  }
  if (version.empty()) {
    throw Error(path.string() + ": not a kbx results database (no schema version); leave it out");
  }
  if (version == std::to_string(kSchemaVersion)) return;
  int v = 0;
  try {
    v = std::stoi(version);
  } catch (const std::exception&) {
  }
  if (v > 0 && v < kSchemaVersion) {
    throw Error(fmt::format(
        "{0}: schema version {1}, kbx merge needs {2}: open it once with this kbx to migrate it "
        "(kbx results --db {0}), then merge again",
        path.string(), version, kSchemaVersion));
  }
  throw Error(
      fmt::format("{}: schema version {}, this kbx reads {}: merge with the kbx that "
                  "wrote it",
                  path.string(), version, kSchemaVersion));
}

/// The writer lock of an input, held while merging so that no kbx eval writes it meanwhile;
/// none when its lock file cannot be made (a read-only folder). Throws Error when a kbx eval
/// holds it.
std::optional<WriterLock> lock_input(const fs::path& path) {
  std::string holder;
  try {
    auto lock = WriterLock::try_take(path, "merge", &holder);
    if (lock) return lock;
  } catch (const Error&) {
    return std::nullopt;
  }
  throw Error(fmt::format("{} is being written by a kbx eval ({}); merge once it finished",
                          path.string(), holder));
}

/// Checks an input (a kbx database of this schema version that no kbx eval is writing) and reads
/// its runs.
Input read_input(const fs::path& path) {
  if (!fs::is_regular_file(path)) throw Error(path.string() + ": no such database");
  Input in{path, {}, lock_input(path)};
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) {
    throw Error(path.string() + ": cannot open: " + (raw ? sqlite3_errmsg(raw) : "out of memory"));
  }
  sqlite3_busy_timeout(raw, 10000);
  check_version(raw, path);
  Stmt s(raw, "SELECT id, run_key, started_at, seed, settings FROM runs ORDER BY id");
  while (s.step()) {
    InputRun r;
    r.id = s.integer(0);
    r.key = s.text(1);
    r.started_at = s.text(2);
    r.seed = s.integer(3);
    try {
      r.shard = nlohmann::json::parse(s.text(4)).value("shard", "");
    } catch (const std::exception&) {  // settings of an older kbx, or none: no shard
    }
    in.runs.push_back(std::move(r));
  }
  return in;
}

/// The output's id of every input's runs (per input: old id -> new id). Distinct runs are
/// numbered in the order they started; copies of one run get one id. *shared counts the copies.
std::vector<std::map<std::int64_t, std::int64_t>> number_runs(const std::vector<Input>& inputs,
                                                              int* shared) {
  std::vector<std::tuple<std::string, std::size_t, std::int64_t>> order;  // start, input, id
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    for (const auto& r : inputs[i].runs) order.emplace_back(r.started_at, i, r.id);
  }
  std::sort(order.begin(), order.end());
  std::vector<std::map<std::int64_t, InputRun>> by_id(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    for (const auto& r : inputs[i].runs) by_id[i][r.id] = r;
  }
  std::map<std::string, std::int64_t> id_of;  // identity -> new id
  std::vector<std::map<std::int64_t, std::int64_t>> maps(inputs.size());
  *shared = 0;
  for (const auto& [start, i, id] : order) {
    const std::string identity = by_id[i].at(id).identity();
    auto it = id_of.find(identity);
    if (it == id_of.end()) {
      it = id_of.emplace(identity, static_cast<std::int64_t>(id_of.size()) + 1).first;
    } else {
      ++*shared;
    }
    maps[i][id] = it->second;
  }
  return maps;
}

/// The output's columns of a table.
std::vector<std::string> columns(sqlite3* db, const std::string& table) {
  Stmt s(db, "PRAGMA main.table_info(" + table + ")");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(1));
  return out;
}

/// "INSERT INTO main.<table>(...) SELECT ... FROM <from> s <tail>": every column of the output's
/// table from the source's column of the same name, unless `set` gives an SQL expression for it
/// ("" leaves the column out: a fresh id). Columns come by name, so an input whose columns were
/// added by a migration (in another order) copies right.
std::string copy_sql(sqlite3* db, const std::string& table, const std::string& from,
                     const std::map<std::string, std::string>& set, const std::string& tail,
                     const std::string& verb = "INSERT") {
  std::string into, select;
  for (const auto& c : columns(db, table)) {
    auto it = set.find(c);
    if (it != set.end() && it->second.empty()) continue;
    into += (into.empty() ? "" : ", ") + c;
    select += (select.empty() ? "" : ", ") + (it != set.end() ? it->second : "s." + c);
  }
  return fmt::format("{} INTO main.{}({}) SELECT {} FROM {} s {}", verb, table, into, select, from,
                     tail);
}

void attach(sqlite3* db, const fs::path& path) {
  Stmt s(db, "ATTACH DATABASE ? AS src");
  s.bind(1, path.string()).step();
}

/// Throws Error when the output has a table merge does not know (a schema change to teach it).
void check_tables(sqlite3* db) {
  Stmt s(db, "SELECT name FROM main.sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'");
  while (s.step()) {
    if (!kKnownTables.count(s.text(0))) {
      throw Error("kbx merge does not know table " + s.text(0) + " of schema version " +
                  std::to_string(kSchemaVersion) + " (store/merge.cpp must say how it merges)");
    }
  }
}

/// Stages the candidates and calibrations of every input, then stores them in the order they
/// were stored (imported_at, measured_at): candidates once per (method, task, sha256, round,
/// sample),
/// calibrations once per (fingerprint, measured_at, peaks).
void merge_stored_in_order(sqlite3* db, const std::vector<Input>& inputs) {
  for (const char* t : {"candidates", "calibration"}) {
    exec(db, fmt::format("CREATE TEMP TABLE staged_{0} AS SELECT *, 0 AS input_no FROM main.{0} "
                         "WHERE 0",
                         t));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    attach(db, inputs[i].path);
    for (const char* t : {"candidates", "calibration"}) {
      std::string select;  // the output's columns in their order, then the input's number
      for (const auto& c : columns(db, t)) select += "s." + c + ", ";
      exec(db, fmt::format("INSERT INTO temp.staged_{0} SELECT {1}{2} FROM src.{0} s", t, select,
                           i + 1));
    }
    exec(db, "DETACH DATABASE src");
  }
  exec(db, copy_sql(db, "candidates", "temp.staged_candidates", {{"id", ""}},
                    "ORDER BY s.imported_at, s.input_no, s.id", "INSERT OR IGNORE"));
  exec(db, copy_sql(db, "calibration", "temp.staged_calibration", {{"id", ""}},
                    "WHERE s.rowid IN (SELECT MIN(rowid) FROM temp.staged_calibration GROUP BY "
                    "fingerprint, measured_at, peaks) ORDER BY s.measured_at, s.input_no, s.id"));
}

/// A job with different verdicts in two inputs.
struct Conflict {
  std::string run_key, method, task;
  std::size_t first_input = 0, second_input = 0;
  std::string first_status, second_status;
};

/// The jobs of the attached input whose status differs from the verdict an earlier input gave
/// the same candidate in a run of the same key (harness_error is no verdict).
std::vector<Conflict> find_conflicts(sqlite3* db, std::size_t input) {
  Stmt s(db,
         "SELECT r.run_key, s.method, s.task, o.input_no, m.status, s.status FROM src.results s "
         "JOIN src.runs sr ON sr.id = s.run_id "
         "JOIN temp.cand_map cm ON cm.old = s.candidate_id "
         "JOIN main.runs r ON r.run_key = sr.run_key "
         "JOIN main.results m ON m.run_id = r.id AND m.candidate_id = cm.new "
         "JOIN temp.origin o ON o.result_id = m.id "
         "WHERE m.status <> s.status AND m.status <> 'harness_error' "
         "AND s.status <> 'harness_error' ORDER BY s.task");
  std::vector<Conflict> out;
  while (s.step()) {
    Conflict c;
    c.run_key = s.text(0);
    c.method = s.text(1);
    c.task = s.text(2);
    c.first_input = static_cast<std::size_t>(s.integer(3));
    c.second_input = input;
    c.first_status = s.text(4);
    c.second_status = s.text(5);
    out.push_back(std::move(c));
  }
  return out;
}

/// Copies the attached input's results (with their cases, samples and grades): a job the output
/// has no row for, or a harness_error row that this input has a verdict for (replaced).
void merge_results(sqlite3* db, std::size_t input) {
  const std::string jobs =
      "JOIN temp.run_map rm ON rm.old = s.run_id JOIN temp.cand_map cm ON cm.old = s.candidate_id ";
  exec(db, "DELETE FROM temp.doomed; INSERT INTO temp.doomed SELECT m.id FROM src.results s " +
               jobs +
               "JOIN main.results m ON m.run_id = rm.new AND m.candidate_id = cm.new "
               "WHERE m.status = 'harness_error' AND s.status <> 'harness_error'");
  for (const char* t : kResultChildren) {
    exec(db, fmt::format("DELETE FROM main.{} WHERE result_id IN (SELECT id FROM temp.doomed)", t));
  }
  exec(db,
       "DELETE FROM main.results WHERE id IN (SELECT id FROM temp.doomed); "
       "DELETE FROM temp.origin WHERE result_id IN (SELECT id FROM temp.doomed);");
  const std::int64_t offset = count(db, "SELECT COALESCE(MAX(id), 0) FROM main.results");
  exec(db, fmt::format("DELETE FROM temp.result_map; INSERT INTO temp.result_map(old, new) "
                       "SELECT s.id, s.id + {} FROM src.results s {} WHERE NOT EXISTS (SELECT 1 "
                       "FROM main.results m WHERE m.run_id = rm.new AND m.candidate_id = cm.new)",
                       offset, jobs));
  exec(db, copy_sql(db, "results", "src.results",
                    {{"id", "x.new"}, {"run_id", "rm.new"}, {"candidate_id", "cm.new"}},
                    "JOIN temp.result_map x ON x.old = s.id " + jobs));
  exec(db, fmt::format("INSERT INTO temp.origin SELECT new, {} FROM temp.result_map", input));
  for (const char* t : kResultChildren) {
    exec(db, copy_sql(db, t, std::string("src.") + t, {{"result_id", "x.new"}},
                      "JOIN temp.result_map x ON x.old = s.result_id"));
  }
}

/// Copies the attached input's generation sessions, their exchanges and costs (schema 6), ids
/// shifted past the output's and candidates mapped to the output's.
void merge_generation(sqlite3* db) {
  const std::int64_t sessions = count(db, "SELECT COALESCE(MAX(id), 0) FROM main.gen_sessions");
  const std::int64_t exchanges = count(db, "SELECT COALESCE(MAX(id), 0) FROM main.exchanges");
  const std::string session = fmt::format("s.session_id + {}", sessions);
  exec(db, copy_sql(db, "gen_sessions", "src.gen_sessions",
                    {{"id", fmt::format("s.id + {}", sessions)}}, "ORDER BY s.id"));
  exec(db, copy_sql(db, "exchanges", "src.exchanges",
                    {{"id", fmt::format("s.id + {}", exchanges)},
                     {"session_id", session},
                     {"candidate_id",
                      "(SELECT cm.new FROM temp.cand_map cm WHERE cm.old = s.candidate_id)"},
                     {"replayed_from", fmt::format("s.replayed_from + {}", exchanges)}},
                    "ORDER BY s.id"));
  exec(db, copy_sql(db, "gen_costs", "src.gen_costs", {{"session_id", session}}, ""));
}

/// Merges the attached input (number `input`, from 1) in one transaction: its runs (`run_ids`:
/// old id -> the output's), results, attempts and baselines. Returns its conflicts.
std::vector<Conflict> merge_input(sqlite3* db, std::size_t input,
                                  const std::map<std::int64_t, std::int64_t>& run_ids) {
  exec(db, "BEGIN IMMEDIATE; DELETE FROM temp.run_map; DELETE FROM temp.cand_map;");
  try {
    Stmt put(db, "INSERT INTO temp.run_map(old, new) VALUES(?, ?)");
    for (const auto& [old_id, new_id] : run_ids) {
      put.reset();
      put.bind(1, old_id).bind(2, new_id).step();
    }
    // A run an earlier input had too (a copy): the later end, and an environment if it lacked one.
    exec(db,
         "UPDATE main.runs AS r SET finished_at = CASE WHEN x.finished_at IS NOT NULL AND "
         "(r.finished_at IS NULL OR x.finished_at > r.finished_at) THEN x.finished_at ELSE "
         "r.finished_at END, environment = COALESCE(NULLIF(r.environment, ''), x.environment) "
         "FROM (SELECT m.new AS id, s.finished_at, s.environment FROM src.runs s "
         "JOIN temp.run_map m ON m.old = s.id) AS x WHERE r.id = x.id");
    exec(db, copy_sql(db, "runs", "src.runs", {{"id", "m.new"}},
                      "JOIN temp.run_map m ON m.old = s.id WHERE m.new NOT IN "
                      "(SELECT id FROM main.runs)"));
    exec(db,
         "INSERT INTO temp.cand_map(old, new) SELECT s.id, c.id FROM src.candidates s "
         "JOIN main.candidates c ON c.method = s.method AND c.task = s.task AND "
         "c.sha256 = s.sha256 AND IFNULL(c.round, -1) = IFNULL(s.round, -1) AND "
         "IFNULL(c.sample, -1) = IFNULL(s.sample, -1)");
    auto conflicts = find_conflicts(db, input);
    merge_results(db, input);
    merge_generation(db);
    exec(db, copy_sql(db, "attempts", "src.attempts",
                      {{"id", ""}, {"run_id", "rm.new"}, {"candidate_id", "cm.new"}},
                      "JOIN temp.run_map rm ON rm.old = s.run_id "
                      "JOIN temp.cand_map cm ON cm.old = s.candidate_id WHERE NOT EXISTS "
                      "(SELECT 1 FROM main.attempts a WHERE a.run_id = rm.new AND "
                      "a.candidate_id = cm.new AND a.started_at = s.started_at AND "
                      "a.pid = s.pid) ORDER BY s.id"));
    exec(db, copy_sql(db, "baselines", "src.baselines", {},
                      "WHERE true ON CONFLICT(fingerprint, task_hash, kind, case_name) DO UPDATE "
                      "SET task = excluded.task, samples = excluded.samples, "
                      "measured_at = excluded.measured_at "
                      "WHERE excluded.measured_at > baselines.measured_at"));
    exec(db, "COMMIT");
    return conflicts;
  } catch (...) {
    exec(db, "ROLLBACK");
    throw;
  }
}

/// Every conflict as one line, naming the run key, shard, job, files and statuses.
std::string describe(const std::vector<Conflict>& conflicts, const std::vector<Input>& inputs,
                     const std::map<std::string, std::string>& shard_of) {
  std::string out = fmt::format(
      "{} job(s) have different verdicts in two inputs (the same candidate in runs of the same "
      "key); merge one of each pair, or rerun the job:",
      conflicts.size());
  for (const auto& c : conflicts) {
    const auto shard = shard_of.find(c.run_key);
    out += fmt::format(
        "\n  run key {}{}: {} of method {}: {} in {}, {} in {}", c.run_key,
        shard != shard_of.end() && !shard->second.empty() ? " (shard " + shard->second + ")" : "",
        c.task, c.method, c.first_status, inputs[c.first_input - 1].path.string(), c.second_status,
        inputs[c.second_input - 1].path.string());
  }
  return out;
}

/// Removes a database file and its WAL companions unless told to keep them.
struct RemoveUnlessKept {
  fs::path path;
  bool keep = false;
  ~RemoveUnlessKept() {
    if (keep) return;
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix, ec);
  }
};

/// Throws Error unless the inputs are distinct and the output may be written (not an input,
/// absent unless force, in a folder that exists); returns the output's canonical path.
fs::path check_paths(const std::vector<fs::path>& inputs, const fs::path& output, bool force) {
  if (inputs.empty()) throw Error("kbx merge: no input databases given");
  std::map<fs::path, fs::path> seen;  // canonical -> as given
  for (const auto& p : inputs) {
    if (!fs::is_regular_file(p)) throw Error(p.string() + ": no such database");
    auto [it, fresh] = seen.emplace(fs::canonical(p), p);
    if (!fresh) {
      throw Error(fmt::format("{} is given twice ({} and {}); give each database once", p.string(),
                              it->second.string(), p.string()));
    }
  }
  // absolute first: a bare file name ("all.db") has no folder of its own to check
  const fs::path out = fs::weakly_canonical(fs::absolute(output));
  if (seen.count(out)) {
    throw Error(output.string() + " is one of the inputs; write the merge to a new file (-o)");
  }
  if (fs::exists(output) && !force) {
    throw Error(output.string() + " exists; pass --force to replace it, or pick another -o");
  }
  const fs::path folder = out.parent_path();
  if (!fs::is_directory(folder)) {
    throw Error("-o " + output.string() + ": folder " + folder.string() + " does not exist");
  }
  return out;
}

}  // namespace

MergeSummary merge_databases(const std::vector<fs::path>& paths, const fs::path& output,
                             bool force) {
  const fs::path out = check_paths(paths, output, force);
  std::vector<Input> inputs;
  std::map<std::string, std::string> shard_of;  // run key -> shard, for messages
  for (const auto& p : paths) {
    inputs.push_back(read_input(p));
    for (const auto& r : inputs.back().runs) shard_of[r.key] = r.shard;
  }
  MergeSummary summary;
  summary.inputs = static_cast<int>(inputs.size());
  const auto run_ids = number_runs(inputs, &summary.shared_runs);

  RemoveUnlessKept temp{out.parent_path() /
                        fmt::format(".{}.merging-{}", out.filename().string(), getpid())};
  std::vector<Conflict> conflicts;
  {
    Store store(temp.path);
    sqlite3* db = store.handle();
    check_tables(db);
    exec(db,
         "CREATE TEMP TABLE run_map(old INTEGER PRIMARY KEY, new INTEGER NOT NULL);"
         "CREATE TEMP TABLE cand_map(old INTEGER PRIMARY KEY, new INTEGER NOT NULL);"
         "CREATE TEMP TABLE result_map(old INTEGER PRIMARY KEY, new INTEGER NOT NULL);"
         "CREATE TEMP TABLE origin(result_id INTEGER PRIMARY KEY, input_no INTEGER NOT NULL);"
         "CREATE TEMP TABLE doomed(id INTEGER PRIMARY KEY);");
    merge_stored_in_order(db, inputs);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      attach(db, inputs[i].path);
      auto found = merge_input(db, i + 1, run_ids[i]);
      conflicts.insert(conflicts.end(), found.begin(), found.end());
      exec(db, "DETACH DATABASE src");
    }
    if (!conflicts.empty()) throw Error(describe(conflicts, inputs, shard_of));
    summary.runs = count(db, "SELECT COUNT(*) FROM main.runs");
    summary.candidates = count(db, "SELECT COUNT(*) FROM main.candidates");
    summary.results = count(db, "SELECT COUNT(*) FROM main.results");
    exec(db, "PRAGMA journal_mode=DELETE");  // one self-contained file to rename
  }
  if (force) {
    std::error_code ec;
    for (const char* suffix : {"-wal", "-shm"}) fs::remove(out.string() + suffix, ec);
  }
  fs::rename(temp.path, out);
  temp.keep = true;
  return summary;
}

}  // namespace kbx::store
