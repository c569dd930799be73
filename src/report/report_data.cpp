#include "report/report_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/error.h"
#include "store/calibration.h"

namespace kbx::report {
namespace {

/// What one database gives before the databases are merged, its run ids already shifted.
struct Loaded {
  std::vector<store::Result> results;
  std::vector<store::RoundVerdict> rounds;
  std::map<std::int64_t, ReportRun> runs;
  RunCalibrations calibrations;
};

/// The shift for a database's run ids: 0 unless one of them is already taken.
std::int64_t run_offset(const std::vector<store::Run>& runs, const std::set<std::int64_t>& taken) {
  const bool collides =
      std::any_of(runs.begin(), runs.end(), [&](const store::Run& r) { return taken.count(r.id); });
  return collides && !taken.empty() ? *taken.rbegin() : 0;
}

Loaded load_one(const std::filesystem::path& path, std::set<std::int64_t>& taken) {
  if (!std::filesystem::exists(path)) {
    throw Error(path.string() + ": no such database (run kbx eval first)");
  }
  store::Store db(path);
  Loaded out;
  const auto runs = db.runs();
  const std::int64_t offset = run_offset(runs, taken);
  for (const auto& r : runs) {
    taken.insert(r.id + offset);
    out.runs[r.id + offset] = {r.id + offset, r.id,     path.string(),
                               r.method,      r.device, r.started_at};
    out.calibrations[r.id + offset] = store::calibration_for_run(db, r);
  }
  out.results = db.results("", std::nullopt);
  for (auto& r : out.results) r.run_id += offset;
  out.rounds = store::round_verdicts(db);
  for (auto& v : out.rounds) v.run_id += offset;
  return out;
}

/// Keeps the rows of the named methods; throws when a named one has none.
template <typename Row>
void keep_methods(std::vector<Row>& rows, const std::vector<std::string>& methods) {
  if (methods.empty()) return;
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [&](const Row& r) {
                              return std::find(methods.begin(), methods.end(), r.method) ==
                                     methods.end();
                            }),
             rows.end());
}

void check_methods_found(const std::vector<store::Result>& all,
                         const std::vector<std::string>& methods) {
  std::set<std::string> present;
  for (const auto& r : all) present.insert(r.method);
  for (const auto& m : methods) {
    if (present.count(m)) continue;
    throw Error(
        fmt::format("--method {}: no results in the database(s); methods there: {}", m,
                    present.empty() ? "none" : fmt::format("{}", fmt::join(present, ", "))));
  }
}

}  // namespace

ReportData load_report(const std::vector<std::filesystem::path>& databases,
                       const std::vector<std::string>& methods) {
  if (databases.empty()) throw Error("kbx report: no database given (--db FILE)");
  ReportData data;
  std::set<std::int64_t> taken;
  std::map<std::pair<std::string, std::string>, store::Result> newest;  // (method, task)
  std::map<std::int64_t, ReportRun> runs;
  std::vector<store::Result> all;
  for (const auto& path : databases) {
    data.databases.push_back(path.string());
    Loaded one = load_one(path, taken);
    all.insert(all.end(), one.results.begin(), one.results.end());
    keep_methods(one.results, methods);
    keep_methods(one.rounds, methods);
    for (auto& r : one.results) {
      auto [it, fresh] = newest.try_emplace({r.method, r.task}, r);
      if (fresh) continue;
      ++data.superseded;
      if (r.created_at >= it->second.created_at) it->second = std::move(r);
    }
    runs.merge(one.runs);
    data.calibrations.merge(one.calibrations);
    data.rounds.insert(data.rounds.end(), one.rounds.begin(), one.rounds.end());
  }
  check_methods_found(all, methods);
  for (auto& [key, r] : newest) data.results.push_back(std::move(r));
  std::set<std::int64_t> shown;
  for (const auto& r : data.results) shown.insert(r.run_id);
  for (const auto& v : data.rounds) shown.insert(v.run_id);
  for (auto id : shown) data.runs.push_back(runs.at(id));
  return data;
}

}  // namespace kbx::report
