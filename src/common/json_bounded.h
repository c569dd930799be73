#pragma once
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

namespace kbx {

/// How deep JSON from outside kbx (a worker's events, a candidates file, a model's answer) may
/// nest. nlohmann::json parses and frees any depth, but copies, compares and dumps a value by
/// recursion: a candidate's event nested a million levels deep crashed kbx (stack overflow) when
/// the event was copied. kbx's own events nest a few levels.
inline constexpr int kMaxJsonDepth = 256;

/// json::parse of text that throws std::runtime_error once it nests deeper than max_depth
/// (json::parse_error for malformed text, as json::parse).
inline nlohmann::json parse_json_bounded(std::string_view text, int max_depth = kMaxJsonDepth) {
  return nlohmann::json::parse(
      text, [max_depth](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > max_depth) {
          throw std::runtime_error(fmt::format("nested deeper than {} levels", max_depth));
        }
        return true;
      });
}

}  // namespace kbx
