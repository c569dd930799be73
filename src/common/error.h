#pragma once
#include <stdexcept>
#include <string>

namespace kbx {

/// An error a user can act on: the message names the file, field or task it concerns.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kbx
