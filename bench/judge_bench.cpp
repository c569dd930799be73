// Judging speed: how long the supervisor takes to read a candidate's output file, map the
// reference's and its float64 shadow, and compare them (the part of a job's overhead that grows
// with the outputs' size). Writes synthetic files into a folder (default /dev/shm), times each
// step a few times and prints the medians.
//
//   kbx_judge_bench [--elements N] [--dtype f32|f16|bf16] [--dir D] [--repeat R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "verdict/compare.h"
#include "verdict/tensor_file.h"

namespace fs = std::filesystem;
using kbx::verdict::DType;
using kbx::verdict::Tensor;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// A tensor of n values near `base` (the same generator for every file, so the comparison
/// passes and runs over every element).
Tensor make(const std::string& name, DType dtype, std::size_t n, float wobble) {
  Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = {static_cast<std::int64_t>(n)};
  const std::size_t elem = dtype == DType::F64 ? 8 : dtype == DType::F32 ? 4 : 2;
  t.bytes.resize(n * elem);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (std::size_t i = 0; i < n; ++i) {
    const float f = dist(rng) * (1.f + wobble * 1e-7f);
    if (dtype == DType::F64) {
      const double d = f;
      std::memcpy(&t.bytes[i * 8], &d, 8);
    } else if (dtype == DType::F32) {
      std::memcpy(&t.bytes[i * 4], &f, 4);
    } else if (dtype == DType::F16) {
      const _Float16 h = static_cast<_Float16>(f);  // GCC and Clang on x86-64 and arm64
      std::memcpy(&t.bytes[i * 2], &h, 2);
    } else {  // bf16: the top half of the float
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      const std::uint16_t h = static_cast<std::uint16_t>(u >> 16);
      std::memcpy(&t.bytes[i * 2], &h, 2);
    }
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = std::size_t{64} << 20;
  std::string dtype_name = "f32";
  fs::path dir = "/dev/shm/kbx-judge-bench";
  int repeat = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--elements")
      n = std::stoull(value);
    else if (key == "--dtype")
      dtype_name = value;
    else if (key == "--dir")
      dir = value;
    else if (key == "--repeat")
      repeat = std::stoi(value);
    else {
      std::fprintf(stderr, "kbx_judge_bench: unknown option %s\n", key.c_str());
      return 2;
    }
  }
  DType dtype;
  if (dtype_name == "f32")
    dtype = DType::F32;
  else if (dtype_name == "f16")
    dtype = DType::F16;
  else if (dtype_name == "bf16")
    dtype = DType::BF16;
  else {
    std::fprintf(stderr, "kbx_judge_bench: unknown dtype %s (f32, f16 or bf16)\n",
                 dtype_name.c_str());
    return 2;
  }
  fs::create_directories(dir);
  std::printf("writing %zu elements (%s) of candidate, reference and float64 shadow to %s\n", n,
              dtype_name.c_str(), dir.c_str());
  kbx::verdict::write_tensor_file(dir / "cand.kbt", {make("out", dtype, n, 1)});
  kbx::verdict::write_tensor_file(dir / "ref.kbt", {make("out", dtype, n, 0)});
  kbx::verdict::write_tensor_file(dir / "shadow.kbt", {make("out", DType::F64, n, 0)});

  kbx::suite::Contract contract;
  std::vector<double> read_cand, map_ref, compare, total;
  for (int r = 0; r < repeat; ++r) {
    const double t0 = now();
    const auto cand = kbx::verdict::read_tensor_file(dir / "cand.kbt");
    const double t1 = now();
    const auto ref = kbx::verdict::read_reference_tensor_file(dir / "ref.kbt");
    const auto shadow = kbx::verdict::read_reference_tensor_file(dir / "shadow.kbt");
    const double t2 = now();
    const auto v =
        kbx::verdict::compare_leaf(cand.tensors[0], ref.tensors[0], &shadow.tensors[0], contract);
    const double t3 = now();
    if (v.status != kbx::verdict::Status::Passed) {
      std::fprintf(stderr, "kbx_judge_bench: the comparison failed: %s\n", v.detail.c_str());
      return 1;
    }
    read_cand.push_back(t1 - t0), map_ref.push_back(t2 - t1), compare.push_back(t3 - t2);
    total.push_back(t3 - t0);
  }
  std::printf(
      "median of %d: read candidate %.3f s, map reference and shadow %.3f s, compare "
      "%.3f s, total %.3f s\n",
      repeat, median(read_cand), median(map_ref), median(compare), median(total));
  fs::remove_all(dir);
  return 0;
}
