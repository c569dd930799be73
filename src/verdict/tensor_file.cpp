#include "verdict/tensor_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "common/error.h"

namespace kbx::verdict {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F64, "float64", 8},   {DType::F32, "float32", 4},   {DType::F16, "float16", 2},
    {DType::BF16, "bfloat16", 2}, {DType::I64, "int64", 8},     {DType::I32, "int32", 4},
    {DType::I16, "int16", 2},     {DType::I8, "int8", 1},       {DType::U8, "uint8", 1},
    {DType::Bool, "bool", 1},     {DType::C64, "complex64", 8}, {DType::C128, "complex128", 16},
};
constexpr char kMagic[8] = {'K', 'B', 'X', 'T', 1, 0, 0, 0};

double half_to_double(std::uint16_t h) {
  const int sign = h >> 15;
  const int exp = (h >> 10) & 0x1F;
  const int mant = h & 0x3FF;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(static_cast<double>(mant + 1024), exp - 25);
  }
  return sign ? -v : v;
}

double bf16_to_double(std::uint16_t b) {
  std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

/// Reads a .kbt file piecewise, straight into the tensors' buffers (files reach gigabytes).
class Reader {
 public:
  explicit Reader(const std::filesystem::path& path) : in_(path, std::ios::binary), path_(path) {
    if (!in_) throw Error(path_.string() + ": cannot open tensor file");
  }
  void read(void* dst, size_t n) {
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (static_cast<size_t>(in_.gcount()) != n) {
      throw Error(path_.string() + ": truncated tensor file");
    }
  }
  template <typename T>
  T get() {
    T v;
    read(&v, sizeof(T));
    return v;
  }
  std::string bytes(size_t n) {
    std::string s(n, '\0');
    read(s.data(), n);
    return s;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::ifstream in_;
  std::filesystem::path path_;
};

}  // namespace

const char* dtype_name(DType d) {
  for (const auto& i : kDTypes) {
    if (i.dtype == d) return i.name;
  }
  return "?";
}

bool parse_dtype(const std::string& name, DType* out) {
  for (const auto& i : kDTypes) {
    if (name == i.name) {
      *out = i.dtype;
      return true;
    }
  }
  return false;
}

size_t dtype_size(DType d) {
  for (const auto& i : kDTypes) {
    if (i.dtype == d) return i.size;
  }
  return 0;
}

bool is_complex(DType d) {
  return d == DType::C64 || d == DType::C128;
}

bool is_floating(DType d) {
  return d == DType::F64 || d == DType::F32 || d == DType::F16 || d == DType::BF16 || is_complex(d);
}

double dtype_eps(DType d) {
  switch (d) {
    case DType::F64:
    case DType::C128: return std::numeric_limits<double>::epsilon();
    case DType::F32:
    case DType::C64: return std::numeric_limits<float>::epsilon();
    case DType::F16: return 0.0009765625;
    case DType::BF16: return 0.0078125;
    default: return 0.0;
  }
}

std::int64_t Tensor::numel() const {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

namespace {
template <typename T, typename F>
void convert(const unsigned char* p, std::vector<double>& out, F f) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = f(load<T>(p + sizeof(T) * i));
}
}  // namespace

std::vector<double> Tensor::to_doubles() const {
  const std::int64_t n = numel() * (is_complex(dtype) ? 2 : 1);
  std::vector<double> out(static_cast<size_t>(n));
  const unsigned char* p = bytes.data();
  auto same = [](auto v) { return static_cast<double>(v); };
  switch (dtype) {
    case DType::F64:
    case DType::C128: convert<double>(p, out, same); break;
    case DType::F32:
    case DType::C64: convert<float>(p, out, same); break;
    case DType::F16: convert<std::uint16_t>(p, out, half_to_double); break;
    case DType::BF16: convert<std::uint16_t>(p, out, bf16_to_double); break;
    case DType::I64: convert<std::int64_t>(p, out, same); break;
    case DType::I32: convert<std::int32_t>(p, out, same); break;
    case DType::I16: convert<std::int16_t>(p, out, same); break;
    case DType::I8: convert<std::int8_t>(p, out, same); break;
    case DType::U8:
    case DType::Bool: convert<std::uint8_t>(p, out, same); break;
  }
  return out;
}

bool Tensor::bitwise_equal(const Tensor& other) const {
  return dtype == other.dtype && shape == other.shape && bytes == other.bytes;
}

std::string Tensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const Tensor* TensorFile::find(const std::string& name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TensorFile read_tensor_file(const std::filesystem::path& path) {
  Reader r(path);
  if (r.bytes(8) != std::string(kMagic, 8)) throw Error(path.string() + ": not a kbx tensor file");
  TensorFile file;
  const auto count = r.get<std::uint32_t>();
  for (std::uint32_t k = 0; k < count; ++k) {
    Tensor t;
    t.name = r.bytes(r.get<std::uint16_t>());
    std::string dtype = r.bytes(r.get<std::uint16_t>());
    if (!parse_dtype(dtype, &t.dtype)) throw Error(path.string() + ": unknown dtype " + dtype);
    const auto ndim = r.get<std::uint8_t>();
    for (int d = 0; d < ndim; ++d) {
      auto s = r.get<std::int64_t>();
      if (s < 0) throw Error(path.string() + ": negative dimension in " + t.name);
      t.shape.push_back(s);
    }
    const auto nbytes = r.get<std::uint64_t>();
    if (nbytes != static_cast<std::uint64_t>(t.numel()) * dtype_size(t.dtype)) {
      throw Error(path.string() + ": size of " + t.name + " does not match its shape");
    }
    t.bytes.resize(nbytes);
    r.read(t.bytes.data(), nbytes);
    file.tensors.push_back(std::move(t));
  }
  return file;
}

void write_tensor_file(const std::filesystem::path& path, const std::vector<Tensor>& tensors) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path.string() + ": cannot write tensor file");
  auto put = [&](const void* p, size_t n) { out.write(static_cast<const char*>(p), n); };
  put(kMagic, 8);
  const auto count = static_cast<std::uint32_t>(tensors.size());
  put(&count, 4);
  for (const auto& t : tensors) {
    const auto nl = static_cast<std::uint16_t>(t.name.size());
    put(&nl, 2);
    put(t.name.data(), nl);
    const std::string dn = dtype_name(t.dtype);
    const auto dl = static_cast<std::uint16_t>(dn.size());
    put(&dl, 2);
    put(dn.data(), dl);
    const auto ndim = static_cast<std::uint8_t>(t.shape.size());
    put(&ndim, 1);
    for (auto s : t.shape) put(&s, 8);
    const auto nbytes = static_cast<std::uint64_t>(t.bytes.size());
    put(&nbytes, 8);
    put(t.bytes.data(), t.bytes.size());
  }
  if (!out) throw Error(path.string() + ": write failed");
}

Tensor zeros_like(const Tensor& t) {
  Tensor z = t;
  std::fill(z.bytes.begin(), z.bytes.end(), 0);
  return z;
}

}  // namespace kbx::verdict
