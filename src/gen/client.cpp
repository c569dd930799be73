#include "gen/client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "common/error.h"
#include "common/json_bounded.h"
#include "common/util.h"

namespace kbx::gen {
using nlohmann::json;

namespace {

/// A reply larger than this is cut off (an error): a model's reply is a few hundred kilobytes.
constexpr std::size_t kMaxBody = 64u << 20;

struct Received {
  std::string body;
  std::optional<double> retry_after_s;
  bool too_big = false;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* r = static_cast<Received*>(user);
  if (r->body.size() + size * n > kMaxBody) {
    r->too_big = true;
    return 0;  // makes curl stop with CURLE_WRITE_ERROR
  }
  r->body.append(data, size * n);
  return size * n;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* r = static_cast<Received*>(user);
  std::string line(data, size * n);
  std::string lower = line;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.rfind("retry-after:", 0) == 0) {
    try {
      std::size_t used = 0;
      const double v = std::stod(line.substr(12), &used);
      if (v >= 0) r->retry_after_s = v;
    } catch (const std::exception&) {  // an HTTP date: the backoff decides instead
    }
  }
  return size * n;
}

double jitter_unit() {
  thread_local std::mt19937_64 rng(random_seed());
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

/// Error text of an HTTP error reply: its status and the start of its body.
std::string http_error(int status, const std::string& url, const std::string& body) {
  std::string shown = body.substr(0, 500);
  return fmt::format("HTTP {} from {}: {}", status, url, shown.empty() ? "(empty body)" : shown);
}

void read_usage(const json& usage, ChatReply& reply) {
  if (!usage.is_object()) return;
  if (usage.contains("prompt_tokens") && usage["prompt_tokens"].is_number_integer())
    reply.prompt_tokens = usage["prompt_tokens"].get<long long>();
  if (usage.contains("completion_tokens") && usage["completion_tokens"].is_number_integer())
    reply.completion_tokens = usage["completion_tokens"].get<long long>();
}

}  // namespace

void parse_completion(const std::string& body, ChatReply& reply) {
  json doc;
  try {
    doc = parse_json_bounded(body);
  } catch (const std::exception& e) {  // malformed, or nested beyond kMaxJsonDepth
    throw Error(std::string("the reply is not JSON (") + e.what() + ")");
  }
  if (!doc.is_object() || !doc.contains("choices") || !doc["choices"].is_array() ||
      doc["choices"].empty()) {
    throw Error("the reply has no choices[0] (not a chat completion)");
  }
  const json& choice = doc["choices"][0];
  const json message = choice.value("message", json::object());
  if (message.contains("content") && message["content"].is_string())
    reply.content = message["content"].get<std::string>();
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
    reply.finish_reason = choice["finish_reason"].get<std::string>();
  if (doc.contains("usage")) read_usage(doc["usage"], reply);
}

void parse_stream(const std::string& body, ChatReply& reply) {
  bool done = false;
  for (const auto& raw : split(body, '\n')) {
    std::string line = raw;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("data:", 0) != 0) continue;  // comments, event: and id: lines
    std::string data = line.substr(5);
    if (!data.empty() && data.front() == ' ') data.erase(0, 1);
    if (data == "[DONE]") {
      done = true;
      break;
    }
    json chunk;
    try {
      chunk = parse_json_bounded(data);
    } catch (const std::exception& e) {
      throw Error("a stream chunk is not JSON (" + std::string(e.what()) +
                  "): " + data.substr(0, 200));
    }
    if (chunk.contains("error")) throw Error("the stream reported an error: " + chunk.dump());
    if (chunk.contains("usage")) read_usage(chunk["usage"], reply);
    if (!chunk.contains("choices") || !chunk["choices"].is_array()) continue;
    for (const auto& choice : chunk["choices"]) {
      const json delta = choice.value("delta", json::object());
      if (delta.contains("content") && delta["content"].is_string())
        reply.content += delta["content"].get<std::string>();
      if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
        reply.finish_reason = choice["finish_reason"].get<std::string>();
    }
  }
  if (!done) throw Error("the stream ended without data: [DONE] (cut off?)");
}

double retry_delay(const Endpoint& e, int retry, std::optional<double> retry_after, double unit) {
  if (retry_after) return std::min(*retry_after, e.max_backoff_s);
  const double full = std::min(e.max_backoff_s, e.backoff_s * std::pow(2.0, retry - 1));
  return full / 2 + unit * full / 2;
}

std::string redact(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  for (std::size_t at = text.find(secret); at != std::string::npos;
       at = text.find(secret, at + 1)) {
    text.replace(at, secret.size(), "[api key]");
  }
  return text;
}

ChatClient::ChatClient(Endpoint endpoint) : e_(std::move(endpoint)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (!e_.api_key_env.empty()) {
    const char* key = std::getenv(e_.api_key_env.c_str());
    if (!key || !*key) {
      throw Error("the method config's model.api_key_env names " + e_.api_key_env +
                  ", which is not set: export " + e_.api_key_env +
                  "=<your key> (kbx reads the "
                  "key from the environment only)");
    }
    key_ = key;
  }
}

HttpResult ChatClient::post(const std::string& body) const {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> h(curl_easy_init(), &curl_easy_cleanup);
  if (!h) return {0, "", "curl_easy_init failed", false, std::nullopt};
  const std::string url = e_.base_url + "/chat/completions";
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  if (e_.stream) headers = curl_slist_append(headers, "Accept: text/event-stream");
  if (!key_.empty())
    headers = curl_slist_append(headers, ("Authorization: Bearer " + key_).c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> hold(headers, &curl_slist_free_all);
  Received got;
  CURL* c = h.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &got);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &got);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(e_.timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(e_.connect_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_USERAGENT, "kbx/" KBX_VERSION);
  const CURLcode rc = curl_easy_perform(c);
  HttpResult r;
  r.body = std::move(got.body);
  r.retry_after_s = got.retry_after_s;
  if (rc != CURLE_OK) {
    r.timed_out = rc == CURLE_OPERATION_TIMEDOUT;
    r.error = got.too_big   ? fmt::format("the reply from {} exceeded {} MiB", url, kMaxBody >> 20)
              : r.timed_out ? fmt::format("no complete reply from {} within {} s (model.timeout_s)",
                                          url, e_.timeout_s)
                            : fmt::format("{}: {}", url, curl_easy_strerror(rc));
    return r;
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  r.status = static_cast<int>(status);
  return r;
}

json chat_body(const Endpoint& e, const Sampling& s, const json& messages) {
  json body = {{"model", e.model}, {"messages", messages}};
  if (s.temperature) body["temperature"] = *s.temperature;
  if (s.top_p) body["top_p"] = *s.top_p;
  if (s.max_tokens) body["max_tokens"] = *s.max_tokens;
  if (s.seed) body["seed"] = *s.seed;
  if (e.stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

ChatReply ChatClient::complete(const json& body) const {
  ChatReply reply;
  reply.request = body.dump();
  const std::string url = e_.base_url + "/chat/completions";
  const double start = monotonic_seconds();
  for (int attempt = 1;; ++attempt) {
    HttpResult r = post(reply.request);
    reply.attempts = attempt;
    reply.http_status = r.status;
    reply.response = redact(std::move(r.body), key_);
    reply.error.clear();
    if (r.status == 200) {
      try {
        e_.stream ? parse_stream(reply.response, reply) : parse_completion(reply.response, reply);
      } catch (const Error& err) {
        reply.error = url + ": " + err.what();
      }
      break;
    }
    const bool retryable = r.status == 0 || r.status == 429 || r.status >= 500;
    reply.error = r.status ? http_error(r.status, url, reply.response) : r.error;
    if (!retryable) break;
    if (attempt > e_.max_retries) {
      reply.error += fmt::format(" (gave up after {} tries; model.max_retries is {})", attempt,
                                 e_.max_retries);
      break;
    }
    const double wait = retry_delay(e_, attempt, r.retry_after_s, jitter_unit());
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  reply.error = redact(reply.error, key_);
  reply.wall_s = monotonic_seconds() - start;
  return reply;
}

}  // namespace kbx::gen
