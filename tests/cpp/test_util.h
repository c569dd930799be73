#pragma once
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "verdict/tensor_file.h"

namespace kbx::test {

/// A fresh temporary folder, removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kbx-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline verdict::Tensor f32(const std::string& name, const std::vector<float>& values,
                           std::vector<std::int64_t> shape = {}) {
  verdict::Tensor t;
  t.name = name;
  t.dtype = verdict::DType::F32;
  t.shape =
      shape.empty() ? std::vector<std::int64_t>{static_cast<std::int64_t>(values.size())} : shape;
  t.bytes.resize(values.size() * 4);
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

inline verdict::Tensor f64(const std::string& name, const std::vector<double>& values) {
  verdict::Tensor t;
  t.name = name;
  t.dtype = verdict::DType::F64;
  t.shape = {static_cast<std::int64_t>(values.size())};
  t.bytes.resize(values.size() * 8);
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

inline verdict::Tensor i64(const std::string& name, const std::vector<std::int64_t>& values) {
  verdict::Tensor t;
  t.name = name;
  t.dtype = verdict::DType::I64;
  t.shape = {static_cast<std::int64_t>(values.size())};
  t.bytes.resize(values.size() * 8);
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

}  // namespace kbx::test
