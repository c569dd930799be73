#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace kbx::store {

/// One `kbx generate` / `kbx run` command (a generation session): its method, model and config,
/// stored in the `gen_sessions` table (schema 6).
struct GenSession {
  std::int64_t id = 0;
  std::string method;
  std::string strategy;  ///< oneshot, refine or parallel
  std::string model;
  std::string base_url;
  std::string config_path;
  std::string config;   ///< the method config's text as read
  bool replay = false;  ///< its replies came from stored exchanges, not from a model
  std::string started_at, finished_at;
  std::string summary;  ///< JSON: the session's totals (requests, tokens, cost, wall time)
};

/// Where an exchange belongs in a method's generation: the task, round, worker and sample of
/// the candidate it is for, and its turn in that conversation. --replay looks replies up by it.
struct ExchangePlace {
  std::string method, task;
  std::optional<std::int64_t> round, sample;
  std::string worker;
  int turn = 1;  ///< 1 for the first request of a conversation, then one more per reflection
  std::string text() const;  ///< "Math/add round 2 worker w1 sample 1 turn 2", for messages
};

/// One request to the model and what came back, as stored in the `exchanges` table. Bodies are
/// stored as sent and received (a stream's raw `data:` lines); headers, and so the API key, never.
struct Exchange {
  std::int64_t id = 0;
  std::int64_t session_id = 0;
  ExchangePlace place;
  std::string kind = "generate";  ///< "generate" (first turn) or "reflect" (a repair turn)
  std::string request;            ///< the JSON body sent
  std::string request_sha256;
  std::string response;  ///< the body received ("" when none)
  int http_status = 0;   ///< 0: no HTTP reply (connection error, timeout)
  int attempts = 0;      ///< tries made, retries included
  std::string error;     ///< "" when the exchange gave a reply
  std::string started_at;
  double wall_s = 0;
  bool streamed = false;
  std::optional<std::int64_t> prompt_tokens, completion_tokens;
  std::optional<double> cost;
  std::optional<std::int64_t> candidate_id;   ///< the candidate extracted from the reply
  std::string no_candidate;                   ///< why the reply gave no candidate ("" when it did)
  std::optional<std::int64_t> replayed_from;  ///< the stored exchange a --replay answered from

  bool ok() const { return error.empty() && http_status == 200; }
};

/// A task's generation cost in one session (`gen_costs`).
struct TaskCost {
  std::string task;
  std::int64_t requests = 0, failed_requests = 0;
  std::int64_t prompt_tokens = 0, completion_tokens = 0;
  double cost = 0;
  double wall_s = 0;  ///< summed over the task's requests
  std::int64_t candidates = 0, correct = 0;
  /// Prompt plus completion tokens over correct candidates; none when none was correct.
  std::optional<double> tokens_per_correct() const;
};

/// Starts a session; returns its id.
std::int64_t begin_session(Store& db, const GenSession& s);
/// Ends a session with its summary (JSON text).
void finish_session(Store& db, std::int64_t session_id, const std::string& summary);
std::optional<GenSession> find_session(Store& db, std::int64_t session_id);

/// Stores an exchange; returns its id.
std::int64_t save_exchange(Store& db, const Exchange& e);
/// The exchanges of a session (all when session_id is 0), in the order they were stored.
std::vector<Exchange> exchanges(Store& db, std::int64_t session_id);
/// The newest exchange at this place that got a reply from a model (not a replay): what
/// --replay answers with.
std::optional<Exchange> stored_reply(Store& db, const ExchangePlace& place);

/// Replaces a session's per-task costs.
void save_costs(Store& db, std::int64_t session_id, const std::vector<TaskCost>& costs);
std::vector<TaskCost> costs(Store& db, std::int64_t session_id);

/// A candidate's newest verdict (not harness_error), with its cases: what refinement feeds back.
std::optional<Result> candidate_verdict(Store& db, std::int64_t candidate_id);

}  // namespace kbx::store
