#include "store/exchanges.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include "common/util.h"
#include "store/statement.h"

namespace kbx::store {

std::string ExchangePlace::text() const {
  std::string out = task;
  if (round) out += fmt::format(" round {}", *round);
  if (!worker.empty()) out += " worker " + worker;
  if (sample) out += fmt::format(" sample {}", *sample);
  return out + fmt::format(" turn {}", turn);
}

std::optional<double> TaskCost::tokens_per_correct() const {
  if (correct == 0) return std::nullopt;
  return static_cast<double>(prompt_tokens + completion_tokens) / static_cast<double>(correct);
}

std::int64_t begin_session(Store& db, const GenSession& s) {
  Stmt st(
      db.handle(),
      "INSERT INTO gen_sessions(method, strategy, model, base_url, config_path, config, replay, "
      "started_at) VALUES(?,?,?,?,?,?,?,?)");
  st.bind(1, s.method).bind(2, s.strategy).bind(3, s.model).bind(4, s.base_url);
  st.bind(5, s.config_path).bind(6, s.config).bind(7, std::int64_t{s.replay});
  st.bind(8, utc_now_iso()).step();
  return sqlite3_last_insert_rowid(db.handle());
}

void finish_session(Store& db, std::int64_t session_id, const std::string& summary) {
  Stmt st(db.handle(), "UPDATE gen_sessions SET finished_at=?, summary=? WHERE id=?");
  st.bind(1, utc_now_iso()).bind(2, summary).bind(3, session_id).step();
}

std::optional<GenSession> find_session(Store& db, std::int64_t session_id) {
  Stmt st(db.handle(),
          "SELECT id, method, strategy, model, base_url, config_path, config, replay, started_at, "
          "finished_at, summary FROM gen_sessions WHERE id=?");
  st.bind(1, session_id);
  if (!st.step()) return std::nullopt;
  GenSession s;
  s.id = st.integer(0);
  s.method = st.text(1);
  s.strategy = st.text(2);
  s.model = st.text(3);
  s.base_url = st.text(4);
  s.config_path = st.text(5);
  s.config = st.text(6);
  s.replay = st.integer(7) != 0;
  s.started_at = st.text(8);
  s.finished_at = st.text(9);
  s.summary = st.text(10);
  return s;
}

namespace {

constexpr const char* kExchangeColumns =
    "id, session_id, method, task, round, worker, sample, turn, kind, request_sha256, request, "
    "response, http_status, attempts, error, started_at, wall_s, streamed, prompt_tokens, "
    "completion_tokens, cost, candidate_id, no_candidate, replayed_from";

Exchange read_exchange(const Stmt& s) {
  Exchange e;
  e.id = s.integer(0);
  e.session_id = s.integer(1);
  e.place.method = s.text(2);
  e.place.task = s.text(3);
  e.place.round = s.opt_integer(4);
  e.place.worker = s.text(5);
  e.place.sample = s.opt_integer(6);
  e.place.turn = static_cast<int>(s.integer(7));
  e.kind = s.text(8);
  e.request_sha256 = s.text(9);
  e.request = s.text(10);
  e.response = s.text(11);
  e.http_status = static_cast<int>(s.integer(12));
  e.attempts = static_cast<int>(s.integer(13));
  e.error = s.text(14);
  e.started_at = s.text(15);
  e.wall_s = s.real(16);
  e.streamed = s.integer(17) != 0;
  e.prompt_tokens = s.opt_integer(18);
  e.completion_tokens = s.opt_integer(19);
  e.cost = s.opt_real(20);
  e.candidate_id = s.opt_integer(21);
  e.no_candidate = s.text(22);
  e.replayed_from = s.opt_integer(23);
  return e;
}

}  // namespace

std::int64_t save_exchange(Store& db, const Exchange& e) {
  Stmt st(db.handle(),
          "INSERT INTO exchanges(session_id, method, task, round, worker, sample, turn, kind, "
          "request_sha256, request, response, http_status, attempts, error, started_at, wall_s, "
          "streamed, prompt_tokens, completion_tokens, cost, candidate_id, no_candidate, "
          "replayed_from) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  const auto& p = e.place;
  st.bind(1, e.session_id).bind(2, p.method).bind(3, p.task).bind(4, p.round).bind(5, p.worker);
  st.bind(6, p.sample).bind(7, std::int64_t{p.turn}).bind(8, e.kind).bind(9, e.request_sha256);
  st.bind(10, e.request).bind(11, e.response).bind(12, std::int64_t{e.http_status});
  st.bind(13, std::int64_t{e.attempts}).bind(14, e.error);
  st.bind(15, e.started_at.empty() ? utc_now_iso() : e.started_at).bind(16, e.wall_s);
  st.bind(17, std::int64_t{e.streamed}).bind(18, e.prompt_tokens).bind(19, e.completion_tokens);
  st.bind(20, e.cost).bind(21, e.candidate_id).bind(22, e.no_candidate).bind(23, e.replayed_from);
  st.step();
  return sqlite3_last_insert_rowid(db.handle());
}

std::vector<Exchange> exchanges(Store& db, std::int64_t session_id) {
  Stmt st(db.handle(), fmt::format("SELECT {} FROM exchanges WHERE ?1 = 0 OR session_id = ?1 "
                                   "ORDER BY id",
                                   kExchangeColumns));
  st.bind(1, session_id);
  std::vector<Exchange> out;
  while (st.step()) out.push_back(read_exchange(st));
  return out;
}

std::optional<Exchange> stored_reply(Store& db, const ExchangePlace& p) {
  Stmt st(db.handle(),
          fmt::format("SELECT {} FROM exchanges WHERE method=? AND task=? AND round IS ? AND "
                      "worker=? AND sample IS ? AND turn=? AND replayed_from IS NULL AND "
                      "http_status=200 AND error='' ORDER BY id DESC LIMIT 1",
                      kExchangeColumns));
  st.bind(1, p.method).bind(2, p.task).bind(3, p.round).bind(4, p.worker).bind(5, p.sample);
  st.bind(6, std::int64_t{p.turn});
  if (!st.step()) return std::nullopt;
  return read_exchange(st);
}

void save_costs(Store& db, std::int64_t session_id, const std::vector<TaskCost>& costs) {
  Stmt del(db.handle(), "DELETE FROM gen_costs WHERE session_id=?");
  del.bind(1, session_id).step();
  Stmt st(db.handle(),
          "INSERT INTO gen_costs(session_id, task, requests, failed_requests, prompt_tokens, "
          "completion_tokens, cost, wall_s, candidates, correct, tokens_per_correct) "
          "VALUES(?,?,?,?,?,?,?,?,?,?,?)");
  for (const auto& c : costs) {
    st.reset();
    st.bind(1, session_id).bind(2, c.task).bind(3, c.requests).bind(4, c.failed_requests);
    st.bind(5, c.prompt_tokens).bind(6, c.completion_tokens).bind(7, c.cost).bind(8, c.wall_s);
    st.bind(9, c.candidates).bind(10, c.correct).bind(11, c.tokens_per_correct()).step();
  }
}

std::vector<TaskCost> costs(Store& db, std::int64_t session_id) {
  Stmt st(db.handle(),
          "SELECT task, requests, failed_requests, prompt_tokens, completion_tokens, cost, wall_s, "
          "candidates, correct FROM gen_costs WHERE session_id=? ORDER BY task");
  st.bind(1, session_id);
  std::vector<TaskCost> out;
  while (st.step()) {
    TaskCost c;
    c.task = st.text(0);
    c.requests = st.integer(1);
    c.failed_requests = st.integer(2);
    c.prompt_tokens = st.integer(3);
    c.completion_tokens = st.integer(4);
    c.cost = st.real(5);
    c.wall_s = st.real(6);
    c.candidates = st.integer(7);
    c.correct = st.integer(8);
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<Result> candidate_verdict(Store& db, std::int64_t candidate_id) {
  Stmt st(db.handle(),
          "SELECT run_id FROM results WHERE candidate_id=? AND status<>'harness_error' "
          "ORDER BY run_id DESC, id DESC LIMIT 1");
  st.bind(1, candidate_id);
  if (!st.step()) return std::nullopt;
  for (auto& r : db.results("", st.integer(0))) {
    if (r.candidate_id == candidate_id) return r;
  }
  return std::nullopt;
}

}  // namespace kbx::store
