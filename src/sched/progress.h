#pragma once
#include <mutex>
#include <string>

namespace kbx::sched {

/// Prints "kbx: <line>" on stderr.
void say(const std::string& line);

/// The progress of a long command: one rewritten line on a terminal (done/total, passed,
/// ETA), one plain line per finished item otherwise.
class Progress {
 public:
  Progress(std::string what, int total);
  ~Progress();
  /// Records one finished item and redraws.
  void finished(const std::string& item, bool passed, const std::string& status, double seconds);
  /// Prints a line above the progress line.
  void note(const std::string& line);

 private:
  void draw();
  std::string what_;
  int total_;
  int done_ = 0;
  int passed_ = 0;
  double start_;
  bool tty_;
  std::mutex mu_;
};

}  // namespace kbx::sched
