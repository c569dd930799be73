#include "sched/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "common/util.h"

namespace kbx::sched {

void say(const std::string& line) {
  std::fprintf(stderr, "kbx: %s\n", line.c_str());
}

Progress::Progress(std::string what, int total)
    : what_(std::move(what)), total_(total), start_(monotonic_seconds()), tty_(isatty(2)) {}

Progress::~Progress() {
  if (tty_ && done_ > 0) std::fputs("\n", stderr);
}

void Progress::draw() {
  const double elapsed = monotonic_seconds() - start_;
  const double eta = done_ ? elapsed / done_ * (total_ - done_) : 0;
  std::string line = fmt::format("\r{} {}/{}  passed {}  failed {}  elapsed {:.0f}s  ETA {:.0f}s ",
                                 what_, done_, total_, passed_, done_ - passed_, elapsed, eta);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void Progress::finished(const std::string& item, bool passed, const std::string& status,
                        double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++done_;
  passed_ += passed;
  if (tty_) {
    draw();
  } else {
    std::fprintf(stderr, "%s %d/%d %s %s (%.1f s)\n", what_.c_str(), done_, total_, item.c_str(),
                 status.c_str(), seconds);
  }
}

void Progress::note(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tty_) std::fputs("\r\033[K", stderr);
  std::fprintf(stderr, "%s\n", line.c_str());
  if (tty_ && done_) draw();
}

}  // namespace kbx::sched
