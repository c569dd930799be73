#include "slot_request.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kbx::probe {
namespace {

bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (name.starts_with(p)) return true;
  }
  return false;
}

/// Writes all of `text`, waiting out a full pipe and EINTR.
bool write_whole(int fd, std::string_view text, std::string* error) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n > 0) {
      text.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
    } else {
      *error =
          std::string("writing slot_wanted: ") + (n < 0 ? std::strerror(errno) : "no progress");
      return false;
    }
  }
  return true;
}

/// Reads one line (without its newline), a byte at a time so that nothing after it is taken
/// from the pipe (the Python side reads the later answers). At most `limit` bytes.
bool read_line(int fd, std::string* line, size_t limit, std::string* error) {
  line->clear();
  while (line->size() <= limit) {
    char c = 0;
    const ssize_t n = ::read(fd, &c, 1);
    if (n == 1) {
      if (c == '\n') return true;
      line->push_back(c);
    } else if (n == 0) {
      *error = "the supervisor closed the request pipe";
      return false;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, -1);
    } else {
      *error = std::string("reading the slot's answer: ") + std::strerror(errno);
      return false;
    }
  }
  *error = "the slot's answer is longer than a line";
  return false;
}

}  // namespace

bool is_gpu_work_api(std::string_view name) {
  return starts_with_any(name, {"cuLaunch", "cudaLaunch", "cuGraphLaunch", "cudaGraphLaunch",
                                "cuMemcpy", "cudaMemcpy", "cuMemset", "cudaMemset"});
}

std::string slot_wanted_line(std::string_view api) {
  std::string line = R"({"ev":"slot_wanted","at":"launch","api":")";
  for (char c : api.substr(0, 64)) {
    const bool plain =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (plain) line.push_back(c);
  }
  line += "\"}\n";
  return line;
}

bool ask_for_slot(int event_fd, int request_fd, std::string_view api, std::string* error) {
  if (!write_whole(event_fd, slot_wanted_line(api), error)) return false;
  std::string answer;
  if (!read_line(request_fd, &answer, 64, error)) return false;
  if (answer != "go") {
    *error = "the supervisor answered '" + answer.substr(0, 64) + "', not 'go'";
    return false;
  }
  return true;
}

}  // namespace kbx::probe
