#pragma once
// Reading a TOML table field by field (toml++, header-only): used by task manifests and by gen's
// method configs. Include only from a part that has toml++ on its include path.
#include <toml++/toml.h>

#include <set>
#include <string>
#include <vector>

#include "common/error.h"

namespace kbx::suite {

/// Reads fields of one TOML table, remembering which keys were used to reject unknown ones.
class Fields {
 public:
  /// `help` ends the message of an unknown key (where the valid keys are documented).
  Fields(const toml::table& table, std::string file, std::string prefix,
         std::string help = "docs/task-format.md")
      : table_(table), file_(std::move(file)), prefix_(std::move(prefix)), help_(std::move(help)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(file_ + ": field '" + prefix_ + key + "': " + what);
  }

  std::string str(const std::string& key, bool required, const std::string& fallback = "") {
    used_.insert(key);
    const toml::node* node = table_.get(key);
    if (!node) {
      if (required) fail(key, "missing (required)");
      return fallback;
    }
    if (auto v = node->value<std::string>()) return *v;
    fail(key, "expected a string");
  }

  double number(const std::string& key, double fallback) {
    used_.insert(key);
    const toml::node* node = table_.get(key);
    if (!node) return fallback;
    if (auto v = node->value<double>()) return *v;
    fail(key, "expected a number");
  }

  long long integer(const std::string& key, long long fallback) {
    used_.insert(key);
    const toml::node* node = table_.get(key);
    if (!node) return fallback;
    if (node->is_integer()) return *node->value<long long>();
    fail(key, "expected an integer");
  }

  bool boolean(const std::string& key, bool fallback) {
    used_.insert(key);
    const toml::node* node = table_.get(key);
    if (!node) return fallback;
    if (auto v = node->value<bool>()) return *v;
    fail(key, "expected true or false");
  }

  std::vector<std::string> strings(const std::string& key) {
    used_.insert(key);
    std::vector<std::string> out;
    const toml::node* node = table_.get(key);
    if (!node) return out;
    const toml::array* arr = node->as_array();
    if (!arr) fail(key, "expected an array of strings");
    for (const auto& item : *arr) {
      auto v = item.value<std::string>();
      if (!v) fail(key, "expected an array of strings");
      out.push_back(*v);
    }
    return out;
  }

  const toml::table* table(const std::string& key) {
    used_.insert(key);
    const toml::node* node = table_.get(key);
    if (!node) return nullptr;
    if (!node->is_table()) fail(key, "expected a table ([" + prefix_ + key + "])");
    return node->as_table();
  }

  void reject_unknown() const {
    for (const auto& [key, _] : table_) {
      if (!used_.count(std::string(key.str()))) {
        fail(std::string(key.str()), "unknown key (a typo? see " + help_ + ")");
      }
    }
  }

  const std::string& file() const { return file_; }

 private:
  const toml::table& table_;
  std::string file_;
  std::string prefix_;
  std::string help_;
  std::set<std::string> used_;
};

}  // namespace kbx::suite
