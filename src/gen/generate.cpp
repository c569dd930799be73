#include "gen/generate.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/error.h"
#include "common/util.h"
#include "gen/client.h"
#include "gen/feedback.h"
#include "gen/method.h"
#include "gen/prompt.h"
#include "store/calibration.h"
#include "suite/task.h"

namespace kbx::gen {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void say(const std::string& line) {
  std::fprintf(stderr, "kbx: %s\n", line.c_str());
}

/// One request a strategy wants sent: a conversation so far, and where its candidate belongs.
struct Request {
  const suite::Task* task = nullptr;
  store::ExchangePlace place;
  json messages;
  std::string kind = "generate";
};

/// A request and what came of it: the conversation with the model's reply, the candidate, and
/// (after evaluation) its verdict.
struct Attempt {
  Request request;
  json messages;  ///< the request's messages plus the assistant's reply (when one came)
  std::optional<store::Candidate> pending;  ///< the reply's code, until stored
  std::optional<std::int64_t> candidate_id;
  Outcome outcome;
  store::Exchange exchange;  ///< as stored (tokens, cost, timing)
};

int user_turns(const json& messages) {
  int n = 0;
  for (const auto& m : messages) n += m.value("role", "") == "user";
  return n;
}

/// One generation session: the method, its templates, the database and the model (or the
/// stored exchanges, with replay).
class Session {
 public:
  Session(MethodConfig method, store::Store& db, bool replay)
      : m_(std::move(method)), db_(db), replay_(replay) {
    if (!replay_) client_ = std::make_unique<ChatClient>(m_.endpoint);
    calibration_ = store::newest_calibration(db_, "cuda");
    system_ = m_.templates.system.empty() ? "" : read_file(m_.templates.system);
    task_ = read_file(m_.templates.task);
    reflect_ = m_.templates.reflect.empty() ? "" : read_file(m_.templates.reflect);
    store::GenSession s;
    s.method = m_.name;
    s.strategy = strategy_name(m_.strategy);
    s.model = m_.endpoint.model;
    s.base_url = m_.endpoint.base_url;
    s.config_path = m_.path.string();
    s.config = m_.text;
    s.replay = replay_;
    id_ = store::begin_session(db_, s);
  }

  std::int64_t id() const { return id_; }
  const MethodConfig& method() const { return m_; }

  /// The first messages of a conversation about a task: the system and task templates.
  json first_messages(const suite::Task& t) const {
    const Values v = task_values(t, m_.track, calibration_);
    json msgs = json::array();
    if (!system_.empty()) {
      msgs.push_back(
          {{"role", "system"}, {"content", render(system_, m_.templates.system.string(), v)}});
    }
    msgs.push_back({{"role", "user"}, {"content", render(task_, m_.templates.task.string(), v)}});
    return msgs;
  }

  /// An attempt's conversation continued with the reflection message on its verdict.
  json reflection(const Attempt& a) const {
    json msgs = a.messages;
    if (!msgs.empty() && msgs.back().value("role", "") != "assistant") return msgs;  // no reply
    Values v = task_values(*a.request.task, m_.track, calibration_);
    v["verdict"] = verdict_text(a.outcome, calibration_ ? &*calibration_ : nullptr);
    v["status"] = outcome_status(a.outcome);
    v["round"] = std::to_string(a.request.place.round.value_or(1));
    msgs.push_back(
        {{"role", "user"}, {"content", render(reflect_, m_.templates.reflect.string(), v)}});
    return msgs;
  }

  Request request(const suite::Task* t, json messages, std::optional<std::int64_t> round,
                  const std::string& worker, std::int64_t sample) const {
    Request r;
    r.task = t;
    r.place = {m_.name, t->id(), round, sample, worker, user_turns(messages)};
    r.kind = r.place.turn > 1 ? "reflect" : "generate";
    r.messages = std::move(messages);
    return r;
  }

  /// Sends the requests (concurrency of them at once; one at a time on replay) and stores each
  /// exchange and candidate as it finishes. Every thread is joined on return.
  std::vector<Attempt> send(const std::vector<Request>& requests) {
    std::vector<Attempt> out(requests.size());
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    auto work = [&](std::size_t) {
      for (std::size_t i; (i = next++) < requests.size();) {
        try {
          out[i] = attempt(requests[i]);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu_);
          if (!failure) failure = std::current_exception();
          next = requests.size();
        }
      }
    };
    const std::size_t threads =
        replay_ ? 1
                : std::min<std::size_t>(requests.size(),
                                        static_cast<std::size_t>(m_.endpoint.concurrency));
    run_in_parts(std::max<std::size_t>(threads, 1), work);
    if (failure) std::rethrow_exception(failure);
    return out;
  }

  /// Reads the verdicts of the attempts' candidates.
  void read_verdicts(std::vector<Attempt>& attempts) {
    for (auto& a : attempts) {
      if (a.candidate_id) a.outcome.verdict = store::candidate_verdict(db_, *a.candidate_id);
    }
  }

 private:
  ChatReply ask(const Request& r, const json& body, store::Exchange& e) {
    if (!replay_) return client_->complete(body);
    auto stored = store::stored_reply(db_, r.place);
    if (!stored) {
      throw Error("--replay: no stored reply for " + r.place.text() + " of method " + m_.name +
                  " in this database (it was never answered by a model; run without --replay)");
    }
    ChatReply reply;
    reply.request = body.dump();
    reply.response = stored->response;
    reply.http_status = stored->http_status;
    reply.prompt_tokens = stored->prompt_tokens;
    reply.completion_tokens = stored->completion_tokens;
    stored->streamed ? parse_stream(reply.response, reply)
                     : parse_completion(reply.response, reply);
    if (stored->request_sha256 != sha256_hex(reply.request)) {
      say("--replay: the request for " + r.place.text() +
          " differs from the stored one (its feedback changed?); answering with the stored reply");
    }
    e.replayed_from = stored->id;
    e.streamed = stored->streamed;
    return reply;
  }

  /// Sends one request (or answers it from the database), keeps the reply's code, and stores
  /// the exchange and the candidate.
  Attempt attempt(const Request& r) {
    Attempt a;
    a.request = r;
    a.messages = r.messages;
    const json body = chat_body(m_.endpoint, m_.sampling, r.messages);
    store::Exchange& e = a.exchange;
    e.session_id = id_;
    e.place = r.place;
    e.kind = r.kind;
    e.started_at = utc_now_iso();
    e.streamed = m_.endpoint.stream;
    const ChatReply reply = ask(r, body, e);  // replay: one thread, which alone reads the db
    record(reply, e);
    if (!reply.ok()) {
      a.outcome.request_error = reply.error;
      say(r.place.text() + ": " + reply.error);
    } else {
      a.messages.push_back({{"role", "assistant"}, {"content", reply.content}});
      keep_code(a, reply);
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (a.pending) a.candidate_id = e.candidate_id = db_.add_candidate(*a.pending);
    e.no_candidate = a.outcome.no_candidate;
    e.id = store::save_exchange(db_, e);
    return a;
  }

  /// What the exchange came to, as it is stored (the key scrubbed from the request too).
  void record(const ChatReply& reply, store::Exchange& e) const {
    e.request = redact(reply.request, client_ ? client_->secret() : "");
    e.request_sha256 = sha256_hex(reply.request);
    e.response = reply.response;
    e.http_status = reply.http_status;
    e.attempts = reply.attempts;
    e.error = reply.error;
    e.wall_s = reply.wall_s;
    e.prompt_tokens = reply.prompt_tokens;
    e.completion_tokens = reply.completion_tokens;
    e.cost = (reply.prompt_tokens.value_or(0) * m_.endpoint.input_price_per_mtok +
              reply.completion_tokens.value_or(0) * m_.endpoint.output_price_per_mtok) /
             1e6;
  }

  /// The candidate of a reply, or why it has none.
  void keep_code(Attempt& a, const ChatReply& reply) {
    std::string why;
    auto code = extract_code(reply.content, a.request.task->entry, &why);
    if (!code) {
      if (reply.finish_reason == "length") why += " (the reply stopped at sampling.max_tokens)";
      a.outcome.no_candidate = why;
      return;
    }
    store::Candidate c;
    c.method = m_.name;
    c.task = a.request.task->id();
    c.source = *code;
    c.sha256 = sha256_hex(*code);
    c.origin = fmt::format("generated: session {}, {}", id_, a.request.place.text());
    c.round = a.request.place.round;
    c.sample = a.request.place.sample;
    c.worker = a.request.place.worker;
    a.pending = std::move(c);
  }

  MethodConfig m_;
  store::Store& db_;
  bool replay_;
  std::unique_ptr<ChatClient> client_;
  std::optional<store::Calibration> calibration_;
  std::string system_, task_, reflect_;
  std::int64_t id_ = 0;
  std::mutex mu_;
};

/// Judges a round's new candidates (when kbx run evaluates) and reads their verdicts.
/// Returns false when there is no evaluation.
bool judge(Session& s, std::vector<Attempt>& attempts, const Evaluate& evaluate) {
  if (!evaluate) return false;
  std::vector<std::int64_t> ids;
  for (const auto& a : attempts) {
    if (a.candidate_id && std::find(ids.begin(), ids.end(), *a.candidate_id) == ids.end())
      ids.push_back(*a.candidate_id);
  }
  if (!ids.empty()) {
    const int rc = evaluate(ids);
    if (rc != 0) say(fmt::format("evaluation exited with code {} (see above)", rc));
  }
  s.read_verdicts(attempts);
  return true;
}

/// Everything a session did, in the order it happened.
using History = std::vector<Attempt>;

void oneshot(Session& s, const std::vector<const suite::Task*>& tasks, const Evaluate& evaluate,
             History& history) {
  std::vector<Request> reqs;
  for (const auto* t : tasks) {
    for (int k = 1; k <= s.method().samples; ++k) {
      reqs.push_back(s.request(t, s.first_messages(*t), std::nullopt, "", k));
    }
  }
  auto attempts = s.send(reqs);
  judge(s, attempts, evaluate);
  history.insert(history.end(), attempts.begin(), attempts.end());
}

/// GEAK-style: round 1 samples `candidates` replies per task; each later round repairs the best
/// attempt so far (its conversation plus a reflection on its verdict), `candidates` times.
void refine(Session& s, const std::vector<const suite::Task*>& tasks, const Evaluate& evaluate,
            History& history) {
  const MethodConfig& m = s.method();
  std::map<std::string, Attempt> best;
  std::vector<const suite::Task*> active = tasks;
  for (int round = 1; round <= m.rounds && !active.empty(); ++round) {
    std::vector<Request> reqs;
    for (const auto* t : active) {
      const json base = round == 1 ? s.first_messages(*t) : s.reflection(best.at(t->id()));
      for (int k = 1; k <= m.candidates; ++k) reqs.push_back(s.request(t, base, round, "", k));
    }
    auto attempts = s.send(reqs);
    const bool judged = judge(s, attempts, evaluate);
    for (const auto& a : attempts) {
      auto it = best.find(a.request.task->id());
      if (it == best.end() || outcome_rank(a.outcome) > outcome_rank(it->second.outcome))
        best[a.request.task->id()] = a;
    }
    history.insert(history.end(), attempts.begin(), attempts.end());
    if (!judged) {
      if (m.rounds > 1) say("refine: later rounds need verdicts; kbx run evaluates and refines");
      return;
    }
    std::erase_if(active, [&](const suite::Task* t) {
      return m.stop_at_correct && outcome_passed(best.at(t->id()).outcome);
    });
  }
}

/// KernelAgent-style: `workers` independent conversations per task, each repairing its own last
/// attempt every round; with stop_at_correct a task stops at its first correct kernel.
void parallel(Session& s, const std::vector<const suite::Task*>& tasks, const Evaluate& evaluate,
              History& history) {
  const MethodConfig& m = s.method();
  std::map<std::pair<std::string, int>, Attempt> last;  // (task, worker) -> its last attempt
  std::vector<const suite::Task*> active = tasks;
  for (int round = 1; round <= m.rounds && !active.empty(); ++round) {
    std::vector<Request> reqs;
    for (const auto* t : active) {
      for (int w = 1; w <= m.workers; ++w) {
        const json base = round == 1 ? s.first_messages(*t) : s.reflection(last.at({t->id(), w}));
        reqs.push_back(s.request(t, base, round, fmt::format("w{}", w), w));
      }
    }
    auto attempts = s.send(reqs);
    const bool judged = judge(s, attempts, evaluate);
    for (const auto& a : attempts) {
      last[{a.request.task->id(), static_cast<int>(a.request.place.sample.value_or(1))}] = a;
    }
    history.insert(history.end(), attempts.begin(), attempts.end());
    if (!judged) {
      if (m.rounds > 1) say("parallel: later rounds need verdicts; kbx run evaluates and refines");
      return;
    }
    std::erase_if(active, [&](const suite::Task* t) {
      if (!m.stop_at_correct) return false;
      return std::any_of(attempts.begin(), attempts.end(), [&](const Attempt& a) {
        return a.request.task == t && outcome_passed(a.outcome);
      });
    });
  }
}

/// Per task: requests, tokens, cost, time, candidates and the correct ones.
std::vector<store::TaskCost> task_costs(const History& history) {
  std::map<std::string, store::TaskCost> by_task;
  for (const auto& a : history) {
    auto& c = by_task[a.request.task->id()];
    c.task = a.request.task->id();
    ++c.requests;
    c.failed_requests += !a.outcome.request_error.empty();
    c.prompt_tokens += a.exchange.prompt_tokens.value_or(0);
    c.completion_tokens += a.exchange.completion_tokens.value_or(0);
    c.cost += a.exchange.cost.value_or(0);
    c.wall_s += a.exchange.wall_s;
    c.candidates += a.candidate_id.has_value();
    c.correct += outcome_passed(a.outcome);
  }
  std::vector<store::TaskCost> out;
  for (auto& [_, c] : by_task) out.push_back(std::move(c));
  return out;
}

json summary_json(const GenerateSummary& g, double wall_s) {
  json totals = {{"requests", 0},          {"failed_requests", 0}, {"prompt_tokens", 0},
                 {"completion_tokens", 0}, {"cost", 0.0},          {"candidates", 0},
                 {"correct", 0},           {"wall_s", wall_s},     {"evaluated", g.evaluated}};
  for (const auto& c : g.costs) {
    totals["requests"] = totals["requests"].get<std::int64_t>() + c.requests;
    totals["failed_requests"] = totals["failed_requests"].get<std::int64_t>() + c.failed_requests;
    totals["prompt_tokens"] = totals["prompt_tokens"].get<std::int64_t>() + c.prompt_tokens;
    totals["completion_tokens"] =
        totals["completion_tokens"].get<std::int64_t>() + c.completion_tokens;
    totals["cost"] = totals["cost"].get<double>() + c.cost;
    totals["candidates"] = totals["candidates"].get<std::int64_t>() + c.candidates;
    totals["correct"] = totals["correct"].get<std::int64_t>() + c.correct;
  }
  return totals;
}

}  // namespace

GenerateSummary generate(const GenerateOptions& o, const Evaluate& evaluate) {
  MethodConfig method = load_method(o.method_config);
  const suite::Suite suite = suite::load_suite(o.suite_root);
  for (const auto& e : suite.errors) say(e);
  const auto tasks = suite::select(suite, o.category, o.tasks);
  if (tasks.empty()) throw Error("no tasks selected");
  store::Store db(o.db);
  const double start = monotonic_seconds();
  Session s(std::move(method), db, o.replay);
  say(fmt::format("generation session {}: method {} ({}), model {} at {}{}, {} tasks", s.id(),
                  s.method().name, strategy_name(s.method().strategy), s.method().endpoint.model,
                  s.method().endpoint.base_url, o.replay ? " (replay: stored replies only)" : "",
                  tasks.size()));
  History history;
  switch (s.method().strategy) {
    case Strategy::Oneshot: oneshot(s, tasks, evaluate, history); break;
    case Strategy::Refine: refine(s, tasks, evaluate, history); break;
    case Strategy::Parallel: parallel(s, tasks, evaluate, history); break;
  }
  GenerateSummary g;
  g.session_id = s.id();
  g.evaluated = static_cast<bool>(evaluate);
  g.costs = task_costs(history);
  for (const auto& c : g.costs) g.failed_requests += static_cast<int>(c.failed_requests);
  store::save_costs(db, s.id(), g.costs);
  store::finish_session(db, s.id(), summary_json(g, monotonic_seconds() - start).dump());
  return g;
}

std::string summary_table(const GenerateSummary& g) {
  std::string out = fmt::format("{:<40} {:>8} {:>6} {:>10} {:>10} {:>9} {:>8} {:>6} {:>7} {:>12}\n",
                                "task", "requests", "failed", "prompt tok", "compl tok", "cost",
                                "wall s", "cands", "correct", "tok/correct");
  store::TaskCost total;
  for (const auto& c : g.costs) {
    const auto per = c.tokens_per_correct();
    out +=
        fmt::format("{:<40} {:>8} {:>6} {:>10} {:>10} {:>9.4f} {:>8.1f} {:>6} {:>7} {:>12}\n",
                    c.task, c.requests, c.failed_requests, c.prompt_tokens, c.completion_tokens,
                    c.cost, c.wall_s, c.candidates, g.evaluated ? std::to_string(c.correct) : "-",
                    per ? fmt::format("{:.0f}", *per) : "-");
    total.requests += c.requests;
    total.failed_requests += c.failed_requests;
    total.prompt_tokens += c.prompt_tokens;
    total.completion_tokens += c.completion_tokens;
    total.cost += c.cost;
    total.wall_s += c.wall_s;
    total.candidates += c.candidates;
    total.correct += c.correct;
  }
  const auto per = total.tokens_per_correct();
  out += fmt::format("{:<40} {:>8} {:>6} {:>10} {:>10} {:>9.4f} {:>8.1f} {:>6} {:>7} {:>12}\n",
                     "total", total.requests, total.failed_requests, total.prompt_tokens,
                     total.completion_tokens, total.cost, total.wall_s, total.candidates,
                     g.evaluated ? std::to_string(total.correct) : "-",
                     per ? fmt::format("{:.0f}", *per) : "-");
  return out;
}

}  // namespace kbx::gen
