#include "gen/method.h"

#include <toml++/toml.h>

#include <cctype>

#include "common/error.h"
#include "common/util.h"
#include "suite/toml_fields.h"

namespace kbx::gen {
namespace fs = std::filesystem;

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::Oneshot: return "oneshot";
    case Strategy::Refine: return "refine";
    case Strategy::Parallel: return "parallel";
  }
  return "?";
}

namespace {

constexpr const char* kHelp = "README.md, \"Generate with a model\"";

using Fields = suite::Fields;

/// An integer field that must be at least `low`.
int at_least(Fields& f, const std::string& key, long long fallback, long long low) {
  const long long v = f.integer(key, fallback);
  if (v < low || v > 1000000)
    f.fail(key, "must be between " + std::to_string(low) + " and 1000000");
  return static_cast<int>(v);
}

double non_negative(Fields& f, const std::string& key, double fallback) {
  const double v = f.number(key, fallback);
  if (!(v >= 0)) f.fail(key, "must be a number >= 0");
  return v;
}

Strategy parse_strategy(Fields& f) {
  const std::string s = f.str("strategy", true);
  if (s == "oneshot") return Strategy::Oneshot;
  if (s == "refine") return Strategy::Refine;
  if (s == "parallel") return Strategy::Parallel;
  f.fail("strategy", "'" + s + "' is not a strategy (oneshot, refine or parallel)");
}

Endpoint parse_endpoint(Fields& f) {
  Endpoint e;
  e.base_url = f.str("base_url", true);
  if (e.base_url.rfind("http://", 0) != 0 && e.base_url.rfind("https://", 0) != 0) {
    f.fail("base_url", "expected an http:// or https:// URL such as http://localhost:8000/v1");
  }
  while (!e.base_url.empty() && e.base_url.back() == '/') e.base_url.pop_back();
  e.model = f.str("model", true);
  e.api_key_env = f.str("api_key_env", false);
  for (char c : e.api_key_env) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      f.fail("api_key_env",
             "the NAME of an environment variable (letters, digits, _), never the "
             "key itself");
    }
  }
  e.stream = f.boolean("stream", false);
  e.timeout_s = non_negative(f, "timeout_s", e.timeout_s);
  e.connect_timeout_s = non_negative(f, "connect_timeout_s", e.connect_timeout_s);
  e.concurrency = at_least(f, "concurrency", e.concurrency, 1);
  e.max_retries = at_least(f, "max_retries", e.max_retries, 0);
  e.backoff_s = non_negative(f, "backoff_s", e.backoff_s);
  e.max_backoff_s = non_negative(f, "max_backoff_s", e.max_backoff_s);
  e.input_price_per_mtok = non_negative(f, "input_price_per_mtok", 0);
  e.output_price_per_mtok = non_negative(f, "output_price_per_mtok", 0);
  f.reject_unknown();
  return e;
}

Sampling parse_sampling(Fields& f, const toml::table& t) {
  Sampling s;
  if (t.contains("temperature")) s.temperature = non_negative(f, "temperature", 0);
  if (t.contains("top_p")) s.top_p = non_negative(f, "top_p", 1);
  if (t.contains("max_tokens")) s.max_tokens = at_least(f, "max_tokens", 1, 1);
  if (t.contains("seed")) s.seed = f.integer("seed", 0);
  f.reject_unknown();
  return s;
}

/// A template path, relative to the config's folder; it must exist.
fs::path template_path(Fields& f, const std::string& key, const fs::path& folder, bool required) {
  const std::string rel = f.str(key, required);
  if (rel.empty()) return {};
  const fs::path p = fs::path(rel).is_absolute() ? fs::path(rel) : folder / rel;
  if (!fs::is_regular_file(p)) f.fail(key, "template " + p.string() + " does not exist");
  return p;
}

/// The strategy's table ([oneshot], [refine], [parallel]): the keys it takes, others being errors.
void parse_strategy_table(MethodConfig& m, Fields& f) {
  switch (m.strategy) {
    case Strategy::Oneshot: m.samples = at_least(f, "samples", 1, 1); break;
    case Strategy::Refine:
      m.rounds = at_least(f, "rounds", 3, 1);
      m.candidates = at_least(f, "candidates", 4, 1);
      m.stop_at_correct = f.boolean("stop_at_correct", true);
      break;
    case Strategy::Parallel:
      m.workers = at_least(f, "workers", 3, 1);
      m.rounds = at_least(f, "rounds", 5, 1);
      m.stop_at_correct = f.boolean("stop_at_correct", true);
      break;
  }
  f.reject_unknown();
}

}  // namespace

MethodConfig load_method(const fs::path& path) {
  MethodConfig m;
  m.path = path;
  m.text = read_file(path);
  toml::table root;
  try {
    root = toml::parse(m.text, path.string());
  } catch (const toml::parse_error& e) {
    throw Error(path.string() + ": " + std::string(e.description()));
  }
  Fields top(root, path.string(), "", kHelp);
  m.name = top.str("name", false, path.stem().string());
  m.track = top.str("track", false, "triton");
  if (m.track != "triton" && m.track != "any") top.fail("track", "expected triton or any");
  m.strategy = parse_strategy(top);
  top.str("description", false);
  const auto require = [&](const std::string& key) -> const toml::table& {
    const toml::table* t = top.table(key);
    if (!t) top.fail(key, "missing table [" + key + "]");
    return *t;
  };
  Fields model(require("model"), path.string(), "model.", kHelp);
  m.endpoint = parse_endpoint(model);
  static const toml::table empty;
  const toml::table* sampling = top.table("sampling");
  Fields sf(sampling ? *sampling : empty, path.string(), "sampling.", kHelp);
  m.sampling = parse_sampling(sf, sampling ? *sampling : empty);
  Fields prompts(require("prompts"), path.string(), "prompts.", kHelp);
  const fs::path folder = path.parent_path();
  m.templates.system = template_path(prompts, "system", folder, false);
  m.templates.task = template_path(prompts, "task", folder, true);
  m.templates.reflect = template_path(prompts, "reflect", folder, m.strategy != Strategy::Oneshot);
  prompts.reject_unknown();
  // The strategy's parameters: a table named after it ([oneshot], [refine] or [parallel]).
  const std::string table = strategy_name(m.strategy);
  const toml::table* strategy = top.table(table);
  Fields st(strategy ? *strategy : empty, path.string(), table + ".", kHelp);
  parse_strategy_table(m, st);
  top.reject_unknown();
  return m;
}

}  // namespace kbx::gen
