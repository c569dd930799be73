#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "store/exchanges.h"

namespace kbx::gen {

/// Everything `kbx generate` and `kbx run` are asked to do.
struct GenerateOptions {
  std::filesystem::path method_config;  ///< methods/NAME.toml
  std::filesystem::path db = "kbx.db";
  std::filesystem::path suite_root;
  std::vector<std::string> tasks;  ///< "Category/name"; empty: all (or the category's)
  std::string category;
  bool replay = false;  ///< answer every request from the database's stored exchanges
};

/// Judges stored candidates (by id) and stores their verdicts: kbx run passes sched::run_eval
/// restricted to them; returns its exit code. Called with no thread of gen's alive.
using Evaluate = std::function<int(const std::vector<std::int64_t>& candidate_ids)>;

/// What a generation session did: its id, and per task what it cost.
struct GenerateSummary {
  std::int64_t session_id = 0;
  std::vector<store::TaskCost> costs;
  bool evaluated = false;
  int failed_requests = 0;
};

/// Runs a method's strategy over the selected tasks: sends its requests (or answers them from
/// stored exchanges with replay), stores every exchange and every candidate (method, round,
/// worker, sample), and, given `evaluate`, judges each round's new candidates and feeds their
/// verdicts into the next round. Without `evaluate`, refine and parallel stop after round 1.
/// Throws Error for a bad config or, with replay, a request that has no stored reply.
GenerateSummary generate(const GenerateOptions& options, const Evaluate& evaluate);

/// The summary as a table for the terminal: per task requests, tokens, cost, wall time,
/// candidates, correct ones and tokens per correct kernel, then the totals.
std::string summary_table(const GenerateSummary& summary);

}  // namespace kbx::gen
