// libkbx_probe.so loaded outside CUDA: the exports exist, an unconfigured probe stays inert, and a
// configured one always leaves a valid stream (recording on a GPU machine; an Error record saying
// why not on one without a driver). Each case runs in a child process, because the library keeps
// process-wide state.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "kbx/probe_records.h"

namespace {

struct Exports {
  int (*initialize)();
  void (*push)(unsigned long long);
  void (*pop)();
  int (*flush)();
  int (*active)();
  int (*slot_arm)(int, int);
  int (*slot_disarm)();
};

// Loads the library and resolves its exports; nullopt-like (all null) on failure.
Exports load() {
  Exports e{};
  void* lib = dlopen(KBX_PROBE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return e;
  e.initialize = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
  e.push = reinterpret_cast<void (*)(unsigned long long)>(dlsym(lib, "kbx_probe_push"));
  e.pop = reinterpret_cast<void (*)()>(dlsym(lib, "kbx_probe_pop"));
  e.flush = reinterpret_cast<int (*)()>(dlsym(lib, "kbx_probe_flush"));
  e.active = reinterpret_cast<int (*)()>(dlsym(lib, "kbx_probe_active"));
  e.slot_arm = reinterpret_cast<int (*)(int, int)>(dlsym(lib, "kbx_probe_slot_arm"));
  e.slot_disarm = reinterpret_cast<int (*)()>(dlsym(lib, "kbx_probe_slot_disarm"));
  return e;
}

// Runs `body` in a child; returns its exit status (or 100 + signal).
int in_child(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(ProbeLibrary, ExportsResolve) {
  EXPECT_EQ(in_child([] {
              const Exports e = load();
              return e.initialize && e.push && e.pop && e.flush && e.active && e.slot_arm &&
                             e.slot_disarm
                         ? 0
                         : 1;
            }),
            0)
      << dlerror();
}

TEST(ProbeLibrary, UnconfiguredProbeIsInertButCallable) {
  EXPECT_EQ(in_child([] {
              unsetenv("KBX_PROBE_FD");
              unsetenv("KBX_PROBE_FILE");
              const Exports e = load();
              if (!e.initialize) return 1;
              if (e.active() != 0 || e.flush() != 0) return 2;  // callable before initialisation
              if (e.initialize() != 1) return 3;
              e.push(1);
              e.pop();
              if (e.active() != 0 || e.flush() != 0) return 4;
              // An inert probe arms nothing: the worker asks for the timing slot itself.
              int fds[2];
              if (pipe(fds) != 0) return 5;
              if (e.slot_arm(fds[0], fds[1]) != 0 || e.slot_disarm() != 0) return 6;
              return 0;
            }),
            0);
}

TEST(ProbeLibrary, AnotherProcessesStreamIsLeftAlone) {
  const auto path =
      std::filesystem::temp_directory_path() / ("kbx_probe_other_" + std::to_string(getpid()));
  std::filesystem::remove(path);
  EXPECT_EQ(in_child([&] {
              setenv("KBX_PROBE_FILE", path.c_str(), 1);
              setenv("KBX_PROBE_PID", "1", 1);  // not this process
              const Exports e = load();
              if (!e.initialize || e.initialize() != 1) return 1;
              return e.active() == 0 && e.flush() == 0 ? 0 : 2;
            }),
            0);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ProbeLibrary, FileSinkAlwaysGivesAValidStream) {
  const auto path =
      std::filesystem::temp_directory_path() / ("kbx_probe_file_" + std::to_string(getpid()));
  const int status = in_child([&] {
    unsetenv("KBX_PROBE_FD");
    unsetenv("KBX_PROBE_PID");
    setenv("KBX_PROBE_FILE", path.c_str(), 1);
    const Exports e = load();
    if (!e.initialize || e.initialize() != 1) return 1;
    const int active = e.active();
    const int written = e.flush();
    if (active == 1) return written >= 1 ? 10 : 2;  // at least the Flush record
    return written == 0 ? 11 : 3;
  });
  ASSERT_TRUE(status == 10 || status == 11) << "child status " << status;

  std::ifstream in(path, std::ios::binary);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  kbx::probe::Stream stream;
  std::string error;
  ASSERT_TRUE(kbx::probe::parse_stream(
      std::span(reinterpret_cast<const std::byte*>(chars.data()), chars.size()), stream, &error))
      << error;
  EXPECT_NE(stream.header.pid, 0u);
  EXPECT_NE(stream.header.pid, static_cast<std::uint32_t>(getpid()));
  ASSERT_FALSE(stream.records.empty());
  const kbx::probe::Record& last = stream.records.back();
  if (status == 10) {
    EXPECT_EQ(last.kind, kbx::probe::Kind::Flush);
    EXPECT_EQ(last.detail, 1u);
  } else {
    EXPECT_EQ(last.kind, kbx::probe::Kind::Error);
    EXPECT_TRUE(last.name_view().starts_with("cupti")) << last.name_view();
  }
}

}  // namespace
