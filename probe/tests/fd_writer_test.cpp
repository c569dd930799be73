// Bounded, whole writes to the supervisor's pipe or a file.
#include "fd_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

namespace kbx::probe {
namespace {

using namespace std::chrono_literals;

// A pipe closed on destruction.
struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    if (::pipe(fds) == 0) {
      read = fds[0];
      write = fds[1];
    }
  }
  ~Pipe() {
    if (read != -1) ::close(read);
    if (write != -1) ::close(write);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
};

std::vector<std::byte> pattern(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(i * 31 + 7);
  return v;
}

std::vector<std::byte> read_all(int fd) {
  std::vector<std::byte> out;
  std::byte buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.insert(out.end(), buf, buf + n);
  return out;
}

TEST(ProbeFdWriter, AdoptSetsCloexecAndNonblocking) {
  Pipe p;
  ASSERT_NE(p.write, -1);
  std::string error;
  auto w = FdWriter::adopt(p.write, 1000ms, &error);
  ASSERT_TRUE(w) << error;
  EXPECT_TRUE(fcntl(p.write, F_GETFD) & FD_CLOEXEC);
  EXPECT_TRUE(fcntl(p.write, F_GETFL) & O_NONBLOCK);
}

TEST(ProbeFdWriter, WritesWholeBlocksThroughAPipe) {
  Pipe p;
  auto w = FdWriter::adopt(p.write, 5000ms, nullptr);
  ASSERT_TRUE(w);
  const auto data = pattern(1 << 20);  // far more than the pipe holds: needs a draining reader
  std::vector<std::byte> got;
  std::thread reader([&] {
    std::byte buf[4096];
    while (got.size() < data.size()) {
      const ssize_t n = ::read(p.read, buf, sizeof buf);
      if (n <= 0) break;
      got.insert(got.end(), buf, buf + n);
    }
  });
  EXPECT_TRUE(w->write_all(data)) << w->error();
  reader.join();
  EXPECT_EQ(got, data);
  EXPECT_FALSE(w->broken());
}

TEST(ProbeFdWriter, FullPipeTimesOutInsteadOfBlocking) {
  Pipe p;
  fcntl(p.write, F_SETPIPE_SZ, 4096);
  auto w = FdWriter::adopt(p.write, 100ms, nullptr);
  ASSERT_TRUE(w);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(w->write_all(pattern(1 << 20)));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 90ms);
  EXPECT_LT(took, 3000ms);
  EXPECT_NE(w->error().find("timed out after 100 ms"), std::string::npos) << w->error();
  EXPECT_TRUE(w->broken());
  EXPECT_FALSE(w->write_all(pattern(1)));  // stays broken: no records after a gap
}

TEST(ProbeFdWriter, ClosedReaderIsAnErrorNotASignal) {
  Pipe p;
  ::close(p.read);
  p.read = -1;
  auto w = FdWriter::adopt(p.write, 1000ms, nullptr);
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->write_all(pattern(288)));  // would kill the test with SIGPIPE if not suppressed
  EXPECT_NE(w->error().find("Broken pipe"), std::string::npos) << w->error();
}

TEST(ProbeFdWriter, AdoptRejectsBadDescriptors) {
  std::string error;
  EXPECT_FALSE(FdWriter::adopt(987, 100ms, &error));
  EXPECT_NE(error.find("KBX_PROBE_FD=987"), std::string::npos) << error;
  Pipe p;
  error.clear();
  EXPECT_FALSE(FdWriter::adopt(p.read, 100ms, &error));
  EXPECT_NE(error.find("not open for writing"), std::string::npos) << error;
}

TEST(ProbeFdWriter, CreateFileTruncatesAndCloses) {
  const auto path =
      std::filesystem::temp_directory_path() / ("kbx_probe_writer_" + std::to_string(::getpid()));
  { std::ofstream(path) << "old contents that are longer"; }
  {
    auto w = FdWriter::create_file(path.string(), 100ms, nullptr);
    ASSERT_TRUE(w);
    FdWriter moved = std::move(*w);
    EXPECT_TRUE(moved.write_all(pattern(10)));
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_EQ(read_all(fd), pattern(10));
  ::close(fd);
  std::filesystem::remove(path);
  std::string error;
  EXPECT_FALSE(FdWriter::create_file("/nonexistent-dir/x", 100ms, &error));
  EXPECT_NE(error.find("KBX_PROBE_FILE=/nonexistent-dir/x"), std::string::npos);
}

}  // namespace
}  // namespace kbx::probe
