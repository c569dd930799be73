#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace kbx::gen {

/// How a method spends its requests (README, "Generate with a model").
enum class Strategy {
  Oneshot,   ///< k independent samples per task
  Refine,    ///< rounds x candidates: each round repairs the previous round's best candidate
  Parallel,  ///< workers x rounds: independent conversations, each repairing its own candidate
};

const char* strategy_name(Strategy s);

/// The model endpoint and how to talk to it ([model] of a method config). The API key is never
/// here: only the name of the environment variable that holds it.
struct Endpoint {
  std::string base_url;     ///< e.g. http://localhost:8000/v1 (POST {base_url}/chat/completions)
  std::string model;        ///< the "model" field of each request
  std::string api_key_env;  ///< environment variable holding the key; "": no Authorization
  bool stream = false;      ///< server-sent events, with stream_options.include_usage
  double timeout_s = 600;   ///< whole request
  double connect_timeout_s = 10;
  int concurrency = 4;               ///< requests in flight at once
  int max_retries = 4;               ///< retries after the first try (429, 5xx, connection errors)
  double backoff_s = 1;              ///< first retry's delay, doubled each retry, with jitter
  double max_backoff_s = 60;         ///< the longest wait, Retry-After included
  double input_price_per_mtok = 0;   ///< cost of a million prompt tokens
  double output_price_per_mtok = 0;  ///< cost of a million completion tokens
};

/// Sampling parameters sent with every request ([sampling]).
struct Sampling {
  std::optional<double> temperature, top_p;
  std::optional<long long> max_tokens, seed;
};

/// Prompt template files ([prompts]), resolved against the config's folder.
struct Templates {
  std::filesystem::path system;   ///< the system message ("" for none)
  std::filesystem::path task;     ///< the first user message of a conversation
  std::filesystem::path reflect;  ///< the repair message after a verdict (refine, parallel)
};

/// A generating method: a strategy, a model endpoint, prompt templates and sampling parameters.
struct MethodConfig {
  std::filesystem::path path;
  std::string text;              ///< the file as read (stored with each session)
  std::string name;              ///< the method results are stored under (default: the file's stem)
  std::string track = "triton";  ///< the rules the prompt states (triton or any)
  Strategy strategy = Strategy::Oneshot;
  int samples = 1;              ///< oneshot: samples per task
  int rounds = 1;               ///< refine, parallel
  int candidates = 1;           ///< refine: candidates per round
  int workers = 1;              ///< parallel
  bool stop_at_correct = true;  ///< stop a task (refine) or all its workers (parallel) at the
                                ///< first correct kernel
  Endpoint endpoint;
  Sampling sampling;
  Templates templates;
};

/// Reads and validates a method config (TOML); throws Error naming the file and field.
MethodConfig load_method(const std::filesystem::path& path);

}  // namespace kbx::gen
