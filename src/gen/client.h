#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "gen/method.h"

namespace kbx::gen {

/// What one chat completion came to, after its retries: the raw bodies for the database, the
/// assistant's text and the usage the server reported.
struct ChatReply {
  std::string request;   ///< the JSON body sent
  std::string response;  ///< the last body received (a stream's raw text)
  int http_status = 0;   ///< 0 when no HTTP reply came (connection error, timeout)
  int attempts = 0;
  double wall_s = 0;
  std::string error;    ///< "" on success; else what went wrong, naming the URL
  std::string content;  ///< the assistant message's text
  std::string finish_reason;
  std::optional<long long> prompt_tokens, completion_tokens;

  bool ok() const { return error.empty(); }
};

/// One HTTP exchange as the transport saw it (what a retry decision needs).
struct HttpResult {
  int status = 0;  ///< 0: no reply
  std::string body;
  std::string error;  ///< transport error ("" when a reply came)
  bool timed_out = false;
  std::optional<double> retry_after_s;  ///< a Retry-After header in seconds
};

/// The content, finish reason and usage of a chat completion body (non-streaming); throws Error
/// when the body is not one.
void parse_completion(const std::string& body, ChatReply& reply);

/// The same from a stream's server-sent events: `data:` lines of chunks, `data: [DONE]` at the
/// end, usage in the last chunk (stream_options.include_usage). Throws Error on a bad chunk or a
/// stream that ends without [DONE].
void parse_stream(const std::string& body, ChatReply& reply);

/// The delay before retry number `retry` (1, 2, ...): backoff * 2^(retry-1), capped, with equal
/// jitter (half fixed, half uniform from `unit`, a number in [0, 1)); a server's Retry-After wins
/// when given (capped too).
double retry_delay(const Endpoint& e, int retry, std::optional<double> retry_after, double unit);

/// The JSON body of a chat completion: the model, the messages, the sampling parameters that
/// are set, and for a stream "stream": true with stream_options.include_usage.
nlohmann::json chat_body(const Endpoint& e, const Sampling& s, const nlohmann::json& messages);

/// An OpenAI chat-completions client over libcurl: POST {base_url}/chat/completions, the key
/// from the environment variable the config names (Authorization: Bearer), retries with backoff
/// and jitter on 429, 5xx, timeouts and connection errors (honouring Retry-After), a timeout per
/// try. Safe to use from several threads (each call has its own connection).
class ChatClient {
 public:
  /// Throws Error when the config names a key variable that is not set.
  explicit ChatClient(Endpoint endpoint);

  /// Sends a request body (chat_body's) and returns the reply; never throws for what the server
  /// or network did (the reply's error says it).
  ChatReply complete(const nlohmann::json& body) const;

  /// The text a stored body must not contain (the key), "" when there is none.
  const std::string& secret() const { return key_; }

 private:
  HttpResult post(const std::string& body) const;
  Endpoint e_;
  std::string key_;
};

/// Replaces every occurrence of `secret` in text (no-op when secret is empty).
std::string redact(std::string text, const std::string& secret);

}  // namespace kbx::gen
