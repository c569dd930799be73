#include "store/rounds.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <tuple>

#include "store/statement.h"

namespace kbx::store {
namespace {

/// The integer after `key=` or `key:` where key starts a word of the text, if any.
std::optional<int> token_value(const std::string& text, const std::string& key) {
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    const bool word_start = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
    size_t i = at + key.size();
    if (!word_start || i >= text.size() || (text[i] != '=' && text[i] != ':')) continue;
    ++i;
    size_t end = i;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == i || end - i > 9) continue;
    return std::stoi(text.substr(i, end - i));
  }
  return std::nullopt;
}

std::optional<int> json_int(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_number_integer()) return std::nullopt;
  return j.at(key).get<int>();
}

/// A nullable integer column, absent when the column is not selected (index < 0).
std::optional<int> opt_int(const Stmt& s, int index) {
  if (index < 0) return std::nullopt;
  const auto v = s.opt_real(index);
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace

RoundSources round_sources(Store& db) {
  RoundSources out;
  Stmt s(db.handle(), "SELECT name FROM pragma_table_info('candidates')");
  while (s.step()) {
    const std::string name = s.text(0);
    out.round_column |= name == "round";
    out.sample_column |= name == "sample";
    out.worker_column |= name == "worker";
  }
  return out;
}

OriginRound round_from_origin(const std::string& origin) {
  OriginRound out;
  if (!origin.empty() && origin.front() == '{') {
    const auto j = nlohmann::json::parse(origin, nullptr, false);
    if (j.is_object()) {
      out.round = json_int(j, "round");
      out.sample = json_int(j, "sample");
      out.worker = json_int(j, "worker");
      return out;
    }
  }
  out.round = token_value(origin, "round");
  out.sample = token_value(origin, "sample");
  out.worker = token_value(origin, "worker");
  return out;
}

std::vector<RoundVerdict> round_verdicts(Store& db) {
  const RoundSources src = round_sources(db);
  std::string sql = "SELECT r.run_id, r.method, r.task, r.category, r.status, r.speedup, c.origin";
  int next = 7;
  const int round_at = src.round_column ? next++ : -1;
  const int sample_at = src.sample_column ? next++ : -1;
  const int worker_at = src.worker_column ? next++ : -1;
  if (src.round_column) sql += ", c.\"round\"";
  if (src.sample_column) sql += ", c.\"sample\"";
  if (src.worker_column) sql += ", c.\"worker\"";
  sql +=
      " FROM (SELECT q.*, ROW_NUMBER() OVER (PARTITION BY q.candidate_id "
      "ORDER BY q.run_id DESC, q.id DESC) AS newest FROM results q) r "
      "JOIN candidates c ON c.id = r.candidate_id WHERE r.newest = 1";
  Stmt s(db.handle(), sql);
  std::vector<RoundVerdict> out;
  while (s.step()) {
    const OriginRound from_origin = round_from_origin(s.text(6));
    RoundVerdict v;
    const auto round = opt_int(s, round_at);
    if (!round && !from_origin.round) continue;  // carries no round
    v.round = round ? *round : *from_origin.round;
    // sample and worker come from the same place as the round
    v.sample = round ? opt_int(s, sample_at) : from_origin.sample;
    v.worker = round ? opt_int(s, worker_at) : from_origin.worker;
    v.run_id = s.integer(0);
    v.method = s.text(1);
    v.task = s.text(2);
    v.category = s.text(3);
    v.status = s.text(4);
    v.speedup = s.opt_real(5);
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const RoundVerdict& a, const RoundVerdict& b) {
    return std::tie(a.method, a.task, a.round, a.sample) <
           std::tie(b.method, b.task, b.round, b.sample);
  });
  return out;
}

}  // namespace kbx::store
