#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "report/table.h"
#include "store/rounds.h"
#include "store/store.h"

namespace kbx::report {

/// A run as `kbx report` numbers it: runs of several databases may share ids, so a database
/// whose run ids collide with an earlier one's is shifted past them.
struct ReportRun {
  std::int64_t id = 0;           ///< as shown in the report (results' run_id)
  std::int64_t original_id = 0;  ///< in its database
  std::string db;                ///< the database's path, as given
  std::string method, device, started_at;
};

/// Everything `kbx report` shows, read from one or more databases.
struct ReportData {
  std::vector<std::string> databases;  ///< as given, in order
  std::vector<ReportRun> runs;         ///< the runs of the shown rows, by report id
  std::vector<store::Result> results;  ///< newest verdict of each method and task, all databases
  RunCalibrations calibrations;        ///< by report run id
  std::vector<store::RoundVerdict> rounds;  ///< every candidate's verdict that carries a round
  int superseded = 0;  ///< rows left out: a newer verdict of the same method and task came from
                       ///< another database
};

/// Reads the databases (each must exist) and keeps the given methods (all when empty; a method
/// named but found in none is an error naming the methods there). A method and task found in
/// several databases keep the newest verdict (created_at; a tie: the later database).
ReportData load_report(const std::vector<std::filesystem::path>& databases,
                       const std::vector<std::string>& methods);

}  // namespace kbx::report
