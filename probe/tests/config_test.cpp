// Reading the probe's environment.
#include "config.h"

#include <gtest/gtest.h>

#include <map>

namespace kbx::probe {
namespace {

Config read(const std::map<std::string, std::string>& vars, long pid = 100) {
  return read_config(
      [&](const char* name) -> const char* {
        const auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      pid);
}

TEST(ProbeConfig, NothingSetIsInertWithoutComplaint) {
  const Config c = read({});
  EXPECT_EQ(c.sink, Config::Sink::None);
  EXPECT_TRUE(c.problem.empty());
  EXPECT_EQ(c.write_timeout.count(), 5000);
}

TEST(ProbeConfig, FdWins) {
  const Config c = read({{"KBX_PROBE_FD", "7"}, {"KBX_PROBE_FILE", "/tmp/x"}});
  EXPECT_EQ(c.sink, Config::Sink::Fd);
  EXPECT_EQ(c.fd, 7);
}

TEST(ProbeConfig, BadFdIsAProblem) {
  for (const char* bad : {"", "-1", "7x", " 7", "99999999999999999999"}) {
    const Config c = read({{"KBX_PROBE_FD", bad}, {"KBX_PROBE_FILE", "/tmp/x"}});
    EXPECT_EQ(c.sink, Config::Sink::None) << bad;
    EXPECT_NE(c.problem.find("KBX_PROBE_FD"), std::string::npos) << bad;
  }
}

TEST(ProbeConfig, FileExpandsPid) {
  const Config c = read({{"KBX_PROBE_FILE", "/tmp/probe-%p.bin.%p"}}, 4242);
  EXPECT_EQ(c.sink, Config::Sink::File);
  EXPECT_EQ(c.path, "/tmp/probe-4242.bin.4242");
  EXPECT_NE(read({{"KBX_PROBE_FILE", ""}}).problem, "");
}

TEST(ProbeConfig, OnlyTheOwnerProcessWrites) {
  const Config other = read({{"KBX_PROBE_PID", "101"}, {"KBX_PROBE_FD", "7"}}, 100);
  EXPECT_EQ(other.sink, Config::Sink::None);
  EXPECT_TRUE(other.problem.empty());
  const Config owner = read({{"KBX_PROBE_PID", "100"}, {"KBX_PROBE_FD", "7"}}, 100);
  EXPECT_EQ(owner.sink, Config::Sink::Fd);
  EXPECT_NE(read({{"KBX_PROBE_PID", "abc"}, {"KBX_PROBE_FD", "7"}}).problem, "");
}

TEST(ProbeConfig, WriteTimeout) {
  EXPECT_EQ(read({{"KBX_PROBE_WRITE_TIMEOUT_MS", "250"}}).write_timeout.count(), 250);
  const Config bad = read({{"KBX_PROBE_WRITE_TIMEOUT_MS", "0"}, {"KBX_PROBE_FD", "7"}});
  EXPECT_EQ(bad.sink, Config::Sink::None);
  EXPECT_NE(bad.problem.find("KBX_PROBE_WRITE_TIMEOUT_MS"), std::string::npos);
}

}  // namespace
}  // namespace kbx::probe
