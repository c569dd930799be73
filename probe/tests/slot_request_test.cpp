// The timing slot's request from inside the worker (slot_request.h): which CUDA calls are GPU
// work, and the "slot_wanted" / "go" exchange over real pipes.
#include "slot_request.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace kbx::probe {
namespace {

TEST(SlotRequest, LaunchesCopiesAndFillsAreGpuWork) {
  for (const char* name :
       {"cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchKernel_ptsz", "cudaLaunchKernel",
        "cudaLaunchKernelExC_v11060", "cuGraphLaunch", "cudaGraphLaunch", "cuMemcpyHtoDAsync_v2",
        "cudaMemcpyAsync", "cuMemsetD32Async", "cudaMemset"}) {
    EXPECT_TRUE(is_gpu_work_api(name)) << name;
  }
}

TEST(SlotRequest, AllocationsLoadsAndQueriesAreNot) {
  for (const char* name : {"cuMemAlloc_v2", "cudaMalloc", "cuModuleLoadData", "cuCtxGetCurrent",
                           "cudaGetDevice", "cuStreamSynchronize", "cudaStreamGetCaptureInfo",
                           "cuFuncGetAttribute", "cuMemFree_v2", "cudaFuncGetAttributes", ""}) {
    EXPECT_FALSE(is_gpu_work_api(name)) << name;
  }
}

TEST(SlotRequest, WantedLineIsOneJsonLineWithAPlainApiName) {
  EXPECT_EQ(slot_wanted_line("cuLaunchKernel"),
            "{\"ev\":\"slot_wanted\",\"at\":\"launch\",\"api\":\"cuLaunchKernel\"}\n");
  // Quotes, backslashes and newlines never reach the JSON.
  EXPECT_EQ(slot_wanted_line("a\"b\\c\nd"),
            "{\"ev\":\"slot_wanted\",\"at\":\"launch\",\"api\":\"abcd\"}\n");
}

struct Pipes {
  int events[2] = {-1, -1};    // worker writes [1], supervisor reads [0]
  int requests[2] = {-1, -1};  // supervisor writes [1], worker reads [0]
  Pipes() {
    EXPECT_EQ(pipe(events), 0);
    EXPECT_EQ(pipe(requests), 0);
  }
  ~Pipes() {
    for (int fd : {events[0], events[1], requests[0], requests[1]}) {
      if (fd >= 0) close(fd);
    }
  }
  std::string read_event_line() const {
    std::string line;
    char c = 0;
    while (read(events[0], &c, 1) == 1 && c != '\n') line.push_back(c);
    return line;
  }
};

TEST(SlotRequest, WaitsForGoAndLeavesLaterAnswersInThePipe) {
  Pipes p;
  std::thread supervisor([&] {
    EXPECT_EQ(p.read_event_line(), R"({"ev":"slot_wanted","at":"launch","api":"cuLaunchKernel"})");
    const std::string answers = "go\nquiet\n";  // "quiet" is the Python side's, later
    EXPECT_EQ(write(p.requests[1], answers.data(), answers.size()),
              static_cast<ssize_t>(answers.size()));
  });
  std::string error;
  EXPECT_TRUE(ask_for_slot(p.events[1], p.requests[0], "cuLaunchKernel", &error)) << error;
  supervisor.join();
  char rest[16] = {};
  EXPECT_EQ(read(p.requests[0], rest, sizeof rest), 6);
  EXPECT_EQ(std::string(rest, 6), "quiet\n");
}

TEST(SlotRequest, ClosedPipeOrOtherAnswerIsRefused) {
  {
    Pipes p;
    close(p.requests[1]);
    p.requests[1] = -1;
    std::string error;
    EXPECT_FALSE(ask_for_slot(p.events[1], p.requests[0], "cudaMemcpy", &error));
    EXPECT_NE(error.find("closed"), std::string::npos) << error;
  }
  {
    Pipes p;
    const std::string answer = "loud\n";
    ASSERT_EQ(write(p.requests[1], answer.data(), answer.size()),
              static_cast<ssize_t>(answer.size()));
    std::string error;
    EXPECT_FALSE(ask_for_slot(p.events[1], p.requests[0], "cudaMemcpy", &error));
    EXPECT_NE(error.find("loud"), std::string::npos) << error;
  }
  {
    Pipes p;
    const std::string endless(200, 'g');
    ASSERT_EQ(write(p.requests[1], endless.data(), endless.size()),
              static_cast<ssize_t>(endless.size()));
    std::string error;
    EXPECT_FALSE(ask_for_slot(p.events[1], p.requests[0], "cudaMemcpy", &error));
    EXPECT_NE(error.find("longer"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace kbx::probe
