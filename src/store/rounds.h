#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace kbx::store {

/// The verdict of one candidate that carries a refinement round: what a method's per-round
/// trajectory is made of (kbx report). Every candidate's newest verdict, not only each task's.
struct RoundVerdict {
  std::int64_t run_id = 0;
  std::string method;
  std::string task;  ///< "Category/name"
  std::string category;
  std::string status;
  int round = 0;
  std::optional<int> sample;  ///< which of a round's samples, when recorded
  std::optional<int> worker;  ///< which parallel worker, when recorded
  std::optional<double> speedup;
};

/// Where a candidate's round is read from. Candidates gain `round`, `sample` and `worker`
/// columns in a later schema; before that (and for a row whose column is NULL) the round comes
/// from its origin metadata: a JSON object with an integer "round" (and "sample", "worker"), or
/// a `round=N` token (also `round:N`, and the same for sample and worker).
struct RoundSources {
  bool round_column = false;  ///< candidates has a round column (PRAGMA table_info)
  bool sample_column = false;
  bool worker_column = false;
};

/// Which of the round columns this database's candidates table has.
RoundSources round_sources(Store& db);

/// The round (and sample and worker) written in a candidate's origin, if any.
struct OriginRound {
  std::optional<int> round, sample, worker;
};
OriginRound round_from_origin(const std::string& origin);

/// The newest verdict of every candidate that carries a round (from its column, else from its
/// origin), ordered by method, task and round; empty when no candidate carries one.
std::vector<RoundVerdict> round_verdicts(Store& db);

}  // namespace kbx::store
