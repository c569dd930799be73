// src/gen: method configs, templates, code extraction, the protocol's parsing and retry delays,
// the v6 tables, and the client against the loopback server (tests/gen/loopback_server.py).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/util.h"
#include "gen/client.h"
#include "gen/feedback.h"
#include "gen/method.h"
#include "gen/prompt.h"
#include "store/exchanges.h"
#include "store/merge.h"
#include "store/store.h"
#include "suite/task.h"
#include "test_util.h"

namespace kbx {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

/// A method config in a temporary folder with its templates; `extra` is appended to it.
fs::path write_config(const fs::path& dir, const std::string& body) {
  write_file(dir / "task.md", "Write {{task}} ({{signature}})");
  write_file(dir / "reflect.md", "{{verdict}}");
  write_file(dir / "m.toml", body);
  return dir / "m.toml";
}

const char* kRefine = R"(strategy = "refine"
[model]
base_url = "http://127.0.0.1:9/v1/"
model = "m1"
api_key_env = "KBX_TEST_KEY"
[sampling]
temperature = 0.5
max_tokens = 100
[prompts]
task = "task.md"
reflect = "reflect.md"
[refine]
rounds = 2
candidates = 3
)";

TEST(GenMethod, ReadsAValidConfig) {
  test::TempDir dir;
  const auto m = gen::load_method(write_config(dir.path(), kRefine));
  EXPECT_EQ(m.name, "m");
  EXPECT_EQ(m.strategy, gen::Strategy::Refine);
  EXPECT_EQ(m.rounds, 2);
  EXPECT_EQ(m.candidates, 3);
  EXPECT_EQ(m.endpoint.base_url, "http://127.0.0.1:9/v1");  // trailing slash dropped
  EXPECT_EQ(m.endpoint.api_key_env, "KBX_TEST_KEY");
  EXPECT_EQ(m.sampling.temperature, 0.5);
  EXPECT_EQ(m.sampling.max_tokens, 100);
  EXPECT_FALSE(m.sampling.top_p.has_value());
}

/// The Error message of loading a config with `body`.
std::string load_error(const std::string& body) {
  test::TempDir dir;
  try {
    gen::load_method(write_config(dir.path(), body));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GenMethod, UnknownKeysAndBadTypesNameFileAndField) {
  std::string e = load_error(std::string(kRefine) + "workers = 3\n");
  EXPECT_NE(e.find("m.toml"), std::string::npos) << e;
  EXPECT_NE(e.find("'refine.workers'"), std::string::npos) << e;  // parallel's, not refine's
  EXPECT_NE(e.find("unknown key"), std::string::npos) << e;
  e = load_error(std::string(kRefine).replace(std::string(kRefine).find("0.5"), 3, "\"hot\""));
  EXPECT_NE(e.find("'sampling.temperature': expected a number"), std::string::npos) << e;
  e = load_error(std::string(kRefine).replace(std::string(kRefine).find("\"refine\""), 8, "\"x\""));
  EXPECT_NE(e.find("'strategy'"), std::string::npos) << e;
  e = load_error(std::string(kRefine).replace(std::string(kRefine).find("\"KBX_TEST_KEY\""), 14,
                                              "\"sk-abc/123\""));
  EXPECT_NE(e.find("'model.api_key_env'"), std::string::npos) << e;
  e = load_error(std::string(kRefine).replace(std::string(kRefine).find("task.md"), 7, "no.md"));
  EXPECT_NE(e.find("'prompts.task'"), std::string::npos) << e;
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;
}

TEST(GenMethod, ShippedConfigsLoadAndTheirTemplatesRender) {
  const fs::path root = fs::path(KBX_TEST_DIR).parent_path();
  const auto task = suite::load_task(root / "tasks" / "Math" / "add");
  int configs = 0;
  for (const auto& entry : fs::directory_iterator(root / "methods")) {
    if (entry.path().extension() != ".toml") continue;
    ++configs;
    SCOPED_TRACE(entry.path().string());
    const auto m = gen::load_method(entry.path());
    auto values = gen::task_values(task, m.track, std::nullopt);
    const std::string prompt = gen::render(read_file(m.templates.task), "task", values);
    EXPECT_NE(prompt.find("add(input, other"), std::string::npos);  // the signature
    EXPECT_NE(prompt.find("def cases():"), std::string::npos);      // the reference code
    EXPECT_EQ(prompt.find("{{"), std::string::npos);
    if (!m.templates.reflect.empty()) {
      values["verdict"] = "status: numerical_mismatch";
      values["status"] = "numerical_mismatch";
      values["round"] = "1";
      EXPECT_NE(gen::render(read_file(m.templates.reflect), "reflect", values)
                    .find("status: numerical_mismatch"),
                std::string::npos);
    }
    EXPECT_EQ(m.text.find("sk-"), std::string::npos);  // a variable's name, never a key
  }
  EXPECT_EQ(configs, 5);  // the paper's five method families
}

TEST(GenPrompt, NamesTheCalibratedGpuAndItsPeaks) {
  const fs::path root = fs::path(KBX_TEST_DIR).parent_path();
  store::Calibration cal;
  cal.gpu = "NVIDIA H200";
  cal.peaks = {{"copy_bw", 4.1e12}, {"bf16", 7.5e14}};
  const auto v = gen::task_values(suite::load_task(root / "tasks" / "Math" / "add"), "any", cal);
  EXPECT_EQ(v.at("gpu"), "NVIDIA H200");
  EXPECT_EQ(v.at("peaks"), "bf16 750.0 TFLOP/s, memory bandwidth 4100 GB/s");
  EXPECT_NE(v.at("cases").find("- perf_f32_16M (full)"), std::string::npos) << v.at("cases");
  EXPECT_NE(v.at("contract").find("tolerance model: shadow"), std::string::npos);
  EXPECT_EQ(v.at("track_rules"), "Any implementation is accepted, as long as it is correct.");
}

TEST(GenFeedback, StatesTheVerdictOrWhyThereWasNoCandidate) {
  gen::Outcome none;
  none.no_candidate = "empty reply";
  EXPECT_EQ(gen::outcome_status(none), "no_code");
  EXPECT_NE(gen::verdict_text(none, nullptr)
                .find("status: no_code (your reply gave no kernel: "
                      "empty reply)"),
            std::string::npos);
  gen::Outcome wrong;
  wrong.verdict = store::Result{};
  wrong.verdict->status = "numerical_mismatch";
  wrong.verdict->cases_total = 3;
  wrong.verdict->cases_passed = 1;
  wrong.verdict->detail = "Traceback: something";
  store::CaseResult ok, bad;
  ok.name = "a";
  ok.status = "passed";
  bad.name = "b";
  bad.tier = "small";
  bad.status = "numerical_mismatch";
  bad.error_ratio = 123.456;
  bad.detail = "max abs error 2";
  wrong.verdict->cases = {ok, bad};
  const std::string text = gen::verdict_text(wrong, nullptr);
  EXPECT_NE(text.find("status: numerical_mismatch (1 of 3 cases passed)"), std::string::npos);
  EXPECT_NE(text.find("first failing case: b (tier small): numerical_mismatch, error ratio 123.5; "
                      "max abs error 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("log:\nTraceback: something"), std::string::npos) << text;
  gen::Outcome passed;
  passed.verdict = store::Result{};
  passed.verdict->status = "passed";
  passed.verdict->speedup = 1.5;
  EXPECT_GT(gen::outcome_rank(passed), gen::outcome_rank(wrong));
  EXPECT_GT(gen::outcome_rank(wrong), gen::outcome_rank(none));
  EXPECT_NE(gen::verdict_text(passed, nullptr).find("speedup over eager PyTorch: 1.50x"),
            std::string::npos);
}

TEST(GenPrompt, RendersPlaceholdersAndNamesUnknownOnes) {
  EXPECT_EQ(gen::render("a {{x}} b {{ y }}.", "t.md", {{"x", "1"}, {"y", "2"}}), "a 1 b 2.");
  try {
    gen::render("{{nope}}", "t.md", {{"x", "1"}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.md: unknown placeholder {{nope}} (known: x)"),
              std::string::npos)
        << e.what();
  }
}

TEST(GenPrompt, ExtractsTheLastPythonBlockThatDefinesTheEntry) {
  std::string why;
  const std::string reply =
      "First:\n```python\ndef relu(x):\n    return 1\n```\nhelper:\n```python\ndef other():\n"
      "    pass\n```\nfinal:\n```python\nimport triton\ndef relu(x, inplace=False):\n    return "
      "2\n```\n";
  auto code = gen::extract_code(reply, "relu", &why);
  ASSERT_TRUE(code) << why;
  EXPECT_NE(code->find("return 2"), std::string::npos);
  EXPECT_FALSE(gen::extract_code("no code here", "relu", &why));
  EXPECT_NE(why.find("no fenced code block"), std::string::npos) << why;
  EXPECT_FALSE(gen::extract_code("```python\ndef other():\n  pass\n```\n", "relu", &why));
  EXPECT_NE(why.find("none defines the entry function relu"), std::string::npos) << why;
  EXPECT_FALSE(gen::extract_code("```python\ndef relu(x):\n  return x\n", "relu", &why));
  EXPECT_NE(why.find("not closed"), std::string::npos) << why;
  EXPECT_FALSE(gen::extract_code("  \n", "relu", &why));
  EXPECT_EQ(why, "empty reply");
}

TEST(GenClient, ParsesStreamsAndCompletions) {
  gen::ChatReply r;
  gen::parse_stream(
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"he\"}}]}\r\n\r\n"
      ": keep-alive\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"llo\"},\"finish_reason\":\"stop\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\n\n"
      "data: [DONE]\n\n",
      r);
  EXPECT_EQ(r.content, "hello");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.prompt_tokens, 7);
  EXPECT_EQ(r.completion_tokens, 2);
  gen::ChatReply cut;
  EXPECT_THROW(gen::parse_stream("data: {\"choices\":[]}\n\n", cut), Error);
  gen::ChatReply c;
  gen::parse_completion(
      R"({"choices":[{"message":{"content":"x"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4}})",
      c);
  EXPECT_EQ(c.content, "x");
  EXPECT_EQ(c.finish_reason, "length");
  EXPECT_EQ(c.completion_tokens, 4);
  EXPECT_THROW(gen::parse_completion("{\"error\": 1}", c), Error);
  EXPECT_THROW(gen::parse_completion("<html>", c), Error);
}

TEST(GenClient, RetryDelaysBackOffWithJitterAndHonourRetryAfter) {
  gen::Endpoint e;
  e.backoff_s = 1;
  e.max_backoff_s = 10;
  EXPECT_DOUBLE_EQ(gen::retry_delay(e, 1, std::nullopt, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(gen::retry_delay(e, 1, std::nullopt, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(gen::retry_delay(e, 3, std::nullopt, 0.0), 2.0);
  EXPECT_DOUBLE_EQ(gen::retry_delay(e, 10, std::nullopt, 1.0), 10.0);  // capped
  EXPECT_DOUBLE_EQ(gen::retry_delay(e, 1, 3.0, 0.7), 3.0);             // the server's word
  EXPECT_DOUBLE_EQ(gen::retry_delay(e, 1, 300.0, 0.7), 10.0);
  EXPECT_EQ(gen::redact("a sk-1 b sk-1", "sk-1"), "a [api key] b [api key]");
}

TEST(GenStore, ExchangesRoundTripAndReplayFindsThemByPlace) {
  test::TempDir dir;
  store::Store db(dir.path() / "g.db");
  store::GenSession s;
  s.method = "m";
  s.strategy = "refine";
  s.model = "m1";
  s.base_url = "http://x/v1";
  s.config = "strategy = \"refine\"";
  const auto sid = store::begin_session(db, s);
  store::Exchange e;
  e.session_id = sid;
  e.place = {"m", "Math/add", 2, 1, "", 2};
  e.request = "{}";
  e.request_sha256 = sha256_hex("{}");
  e.response = "{\"choices\":[]}";
  e.http_status = 200;
  e.attempts = 2;
  e.prompt_tokens = 10;
  e.no_candidate = "empty reply";
  const auto id = store::save_exchange(db, e);
  auto found = store::stored_reply(db, e.place);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, id);
  EXPECT_EQ(found->attempts, 2);
  EXPECT_EQ(found->prompt_tokens, 10);
  EXPECT_FALSE(found->completion_tokens);
  EXPECT_EQ(found->no_candidate, "empty reply");
  auto other = e.place;
  other.turn = 1;
  EXPECT_FALSE(store::stored_reply(db, other));
  store::TaskCost c;
  c.task = "Math/add";
  c.requests = 3;
  c.prompt_tokens = 30;
  c.completion_tokens = 10;
  c.correct = 2;
  store::save_costs(db, sid, {c});
  auto back = store::costs(db, sid);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].tokens_per_correct(), 20.0);
}

TEST(GenStore, SchemaFiveMigratesToSix) {
  test::TempDir dir;
  const auto path = dir.path() / "v5.db";
  { store::Store db(path); }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "DROP TABLE gen_costs; DROP TABLE exchanges; DROP TABLE gen_sessions; "
                         "UPDATE meta SET value='5' WHERE key='schema_version';",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  store::Store db(path);
  store::GenSession s;
  s.method = "m";
  EXPECT_GT(store::begin_session(db, s), 0);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.handle(), "SELECT value FROM meta WHERE key='schema_version'", -1, &st,
                     nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "6");
  sqlite3_finalize(st);
}

/// A database with one session whose one exchange gave a candidate of `task`.
void write_generation(const fs::path& path, const std::string& task) {
  store::Store db(path);
  store::Candidate c;
  c.method = "m";
  c.task = task;
  c.source = "def f(): pass\n";
  c.sha256 = sha256_hex(c.source);
  c.round = 1;
  store::GenSession s;
  s.method = "m";
  store::Exchange e;
  e.session_id = store::begin_session(db, s);
  e.place = {"m", task, 1, std::nullopt, "", 1};
  e.http_status = 200;
  e.candidate_id = db.add_candidate(c);
  store::save_exchange(db, e);
  store::TaskCost cost;
  cost.task = task;
  cost.requests = 1;
  store::save_costs(db, e.session_id, {cost});
}

TEST(GenStore, MergeCopiesSessionsExchangesAndCosts) {
  test::TempDir dir;
  write_generation(dir.path() / "a.db", "Math/add");
  write_generation(dir.path() / "b.db", "Math/mul");
  store::merge_databases({dir.path() / "a.db", dir.path() / "b.db"}, dir.path() / "all.db", false);
  store::Store db(dir.path() / "all.db");
  const auto all = store::exchanges(db, 0);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_NE(all[0].session_id, all[1].session_id);
  for (const auto& e : all) {
    ASSERT_TRUE(e.candidate_id);
    const auto c = db.candidates_by_id({*e.candidate_id});
    EXPECT_EQ(c.at(0).task, e.place.task);  // candidates renumbered, exchanges follow them
    EXPECT_EQ(store::costs(db, e.session_id).at(0).task, e.place.task);
  }
}

/// The loopback server as a child process, on a free port, serving `script`.
class Loopback {
 public:
  Loopback(const fs::path& dir, const json& script) : log_(dir / "requests.jsonl") {
    write_file(dir / "script.json", script.dump());
    const std::string cmd = "exec python3 " + std::string(KBX_TEST_DIR) +
                            "/gen/loopback_server.py --script " + (dir / "script.json").string() +
                            " --log " + log_.string();
    int out[2];
    if (pipe(out) != 0) throw Error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
      _exit(127);
    }
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    char line[64] = {};
    if (!fgets(line, sizeof line, f)) throw Error("the loopback server did not start");
    port_ = std::atoi(line + 5);
    fclose(f);
  }
  ~Loopback() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::vector<json> requests() const {
    std::vector<json> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

gen::Endpoint endpoint(const std::string& url) {
  gen::Endpoint e;
  e.base_url = url;
  e.model = "m1";
  e.backoff_s = 0.01;
  e.max_retries = 2;
  e.timeout_s = 5;
  return e;
}

json ask(const gen::Endpoint& e, const std::string& text) {
  return gen::chat_body(e, {}, json::array({{{"role", "user"}, {"content", text}}}));
}

TEST(GenClient, RetriesA500AndNotA400) {
  test::TempDir dir;
  Loopback server(dir.path(), {{"replies",
                                {{{"match", "a"}, {"status", 500}},
                                 {{"match", "a"}, {"content", "fine"}},
                                 {{"match", "b"}, {"status", 400}}}}});
  const gen::ChatClient client(endpoint(server.url()));
  const auto e = endpoint(server.url());
  const auto ok = client.complete(ask(e, "a"));
  EXPECT_TRUE(ok.ok()) << ok.error;
  EXPECT_EQ(ok.content, "fine");
  EXPECT_EQ(ok.attempts, 2);
  EXPECT_TRUE(ok.prompt_tokens.has_value());
  const auto bad = client.complete(ask(e, "b"));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.http_status, 400);
  EXPECT_EQ(bad.attempts, 1);
  EXPECT_NE(bad.error.find("HTTP 400"), std::string::npos) << bad.error;
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(GenClient, StreamsAndTimesOut) {
  test::TempDir dir;
  Loopback server(dir.path(), {{"replies",
                                {{{"match", "s"}, {"content", std::string(100, 'x')}},
                                 {{"match", "slow"}, {"content", "late"}, {"delay_s", 3}}}}});
  auto e = endpoint(server.url());
  e.stream = true;
  const auto streamed = gen::ChatClient(e).complete(ask(e, "s"));
  EXPECT_TRUE(streamed.ok()) << streamed.error;
  EXPECT_EQ(streamed.content, std::string(100, 'x'));
  EXPECT_TRUE(streamed.completion_tokens.has_value());
  EXPECT_NE(streamed.response.find("data: [DONE]"), std::string::npos);
  e.stream = false;
  e.timeout_s = 0.5;
  e.max_retries = 0;
  const auto slow = gen::ChatClient(e).complete(ask(e, "slow"));
  EXPECT_FALSE(slow.ok());
  EXPECT_EQ(slow.http_status, 0);
  EXPECT_NE(slow.error.find("within 0.5 s"), std::string::npos) << slow.error;
  const auto log = server.requests();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0]["body"]["stream_options"]["include_usage"], true);
}

}  // namespace
}  // namespace kbx
