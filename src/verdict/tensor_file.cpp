#include "verdict/tensor_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/util.h"

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

/// A float16's value as a float (exact: a float holds every float16). A NaN becomes the quiet
/// NaN of its sign (no payload); -0 stays -0. Every case is computed and the right one picked
/// with bit masks, not branches, so that a loop over many values vectorizes.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1F;
  const std::uint32_t mant = h & 0x3FF;
  // Zero or subnormal: mant * 2^-24, exact in float.
  const float tiny = static_cast<float>(static_cast<std::int32_t>(mant)) * 0x1p-24f;
  std::uint32_t tiny_bits;
  std::memcpy(&tiny_bits, &tiny, 4);
  // Normal: the exponent rebased from 15 to 127, the mantissa widened from 10 to 23 bits.
  const std::uint32_t normal_bits = ((exp + 112) << 23) | (mant << 13);
  // Infinity, or the quiet NaN.
  const std::uint32_t special_bits = 0x7F800000 | static_cast<std::uint32_t>(mant != 0) << 22;
  const std::uint32_t is_tiny = 0 - static_cast<std::uint32_t>(exp == 0);      // all ones or 0
  const std::uint32_t is_special = 0 - static_cast<std::uint32_t>(exp == 31);  // all ones or 0
  const std::uint32_t bits =
      (tiny_bits & is_tiny) | (special_bits & is_special) | (normal_bits & ~(is_tiny | is_special));
  const std::uint32_t signed_bits = bits | sign;
  float f;
  std::memcpy(&f, &signed_bits, 4);
  return f;
}

/// A bfloat16's value as a float: its bits are the float's top half.
float bf16_to_float(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
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

/// Walks the header fields of a mapped .kbt file.
class Cursor {
 public:
  Cursor(const unsigned char* base, size_t size, std::filesystem::path path)
      : base_(base), size_(size), path_(std::move(path)) {}
  const unsigned char* take(size_t n) {
    if (n > size_ - pos_) throw BadTensorFile(path_, "truncated tensor file");
    const unsigned char* p = base_ + pos_;
    pos_ += n;
    return p;
  }
  template <typename T>
  T get() {
    return load<T>(take(sizeof(T)));
  }
  std::string str(size_t n) {
    const unsigned char* p = take(n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }

 private:
  const unsigned char* base_;
  size_t size_;
  size_t pos_ = 0;
  std::filesystem::path path_;
};

}  // namespace

class Mapping {
 public:
  /// trusted: a file of kbx's own reference worker, in a folder no candidate sees or writes, which
  /// nothing truncates while it is read: mapped. Otherwise (a candidate's file): copied.
  Mapping(const std::filesystem::path& path, const std::function<void()>& before_read,
          bool trusted = false) {
    const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      throw BadTensorFile(
          path, err == ELOOP ? "is a symlink, not a tensor file"
                             : std::string("cannot open tensor file: ") + std::strerror(err));
    }
    struct Closer {
      int fd;
      ~Closer() { close(fd); }
    } closer{fd};
    struct stat st {};
    if (fstat(fd, &st) != 0) throw BadTensorFile(path, std::strerror(errno));
    if (!S_ISREG(st.st_mode)) {
      throw BadTensorFile(
          path, std::string("is a ") + file_kind(st.st_mode) + ", not a regular tensor file");
    }
    const size_t size = static_cast<size_t>(st.st_size);
    if (before_read) before_read();
    if (trusted && size > 0) {
      void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) throw BadTensorFile(path, std::string("mmap: ") + std::strerror(errno));
      region_ = p;
      buffer_ = static_cast<unsigned char*>(p);
      size_ = size;
      return;
    }
    allocate(size);
    size_ = size;
    read_all(fd, path, size);
  }
  ~Mapping() {
    if (region_) munmap(region_, size_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

 private:
  /// The buffer a candidate's file is read into, not zeroed first; a large one in huge pages
  /// where the kernel has them (fewer page faults while gigabytes are copied in).
  void allocate(size_t size) {
    constexpr size_t kHugeFrom = size_t{16} << 20;
    if (size >= kHugeFrom) {
      void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) {
        madvise(p, size, MADV_HUGEPAGE);  // advice only: without it, plain pages
        region_ = p;
        buffer_ = static_cast<unsigned char*>(p);
        return;
      }
    }
    bytes_ = std::make_unique_for_overwrite<unsigned char[]>(size);
    buffer_ = bytes_.get();
  }

  /// Reads [first, first + count) of the file into the buffer; the first problem, if any.
  std::string read_range(int fd, size_t first, size_t count) {
    for (size_t done = 0; done < count;) {
      const ssize_t n =
          pread(fd, buffer_ + first + done, count - done, static_cast<off_t>(first + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return std::string("read failed: ") + std::strerror(errno);
      if (n == 0) {
        return "truncated while being read (" + std::to_string(first + done) + " of " +
               std::to_string(size_) + " bytes)";
      }
      done += static_cast<size_t>(n);
    }
    return {};
  }

  /// Reads the whole file; a large one in parts on several threads (the copy and the page
  /// faults of a gigabyte-sized output are most of its judging time otherwise).
  void read_all(int fd, const std::filesystem::path& path, size_t size) {
    const size_t parts = part_count(size, size_t{32} << 20, 8);
    std::vector<std::string> problems(parts);
    run_in_parts(parts, [&](size_t k) {
      const size_t lo = size * k / parts, hi = size * (k + 1) / parts;
      problems[k] = read_range(fd, lo, hi - lo);
    });
    for (const auto& p : problems) {
      if (!p.empty()) throw BadTensorFile(path, p);
    }
  }

 public:
  const unsigned char* base() const { return buffer_; }
  size_t size() const { return size_; }

 private:
  static const char* file_kind(mode_t m) {
    if (S_ISFIFO(m)) return "FIFO";
    if (S_ISDIR(m)) return "folder";
    if (S_ISCHR(m) || S_ISBLK(m)) return "device";
    if (S_ISSOCK(m)) return "socket";
    return "special file";
  }
  std::unique_ptr<unsigned char[]> bytes_;
  void* region_ = nullptr;  ///< mapped: the file itself, or a large buffer it was copied into
  unsigned char* buffer_ = nullptr;  ///< where the file's bytes are (read only once filled)
  size_t size_ = 0;
};

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
void convert(const unsigned char* p, size_t first, size_t count, double* out, F f) {
  for (size_t i = 0; i < count; ++i) out[i] = f(load<T>(p + sizeof(T) * (first + i)));
}
}  // namespace

size_t Tensor::value_count() const {
  return static_cast<size_t>(numel()) * (is_complex(dtype) ? 2 : 1);
}

void Tensor::to_doubles(size_t first, size_t count, double* out) const {
  const unsigned char* p = data();
  auto same = [](auto v) { return static_cast<double>(v); };
  switch (dtype) {
    case DType::F64:
    case DType::C128: convert<double>(p, first, count, out, same); break;
    case DType::F32:
    case DType::C64: convert<float>(p, first, count, out, same); break;
    case DType::F16: convert<std::uint16_t>(p, first, count, out, half_to_float); break;
    case DType::BF16: convert<std::uint16_t>(p, first, count, out, bf16_to_float); break;
    case DType::I64: convert<std::int64_t>(p, first, count, out, same); break;
    case DType::I32: convert<std::int32_t>(p, first, count, out, same); break;
    case DType::I16: convert<std::int16_t>(p, first, count, out, same); break;
    case DType::I8: convert<std::int8_t>(p, first, count, out, same); break;
    case DType::U8:
    case DType::Bool: convert<std::uint8_t>(p, first, count, out, same); break;
  }
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> out(value_count());
  to_doubles(0, out.size(), out.data());
  return out;
}

bool Tensor::bitwise_equal(const Tensor& other) const {
  return dtype == other.dtype && shape == other.shape && size_bytes() == other.size_bytes() &&
         (size_bytes() == 0 || std::memcmp(data(), other.data(), size_bytes()) == 0);
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

namespace {
/// True when shape's element count times the element size is nbytes, with no overflow on the
/// way and no more bytes than the file holds.
bool size_matches(const std::vector<std::int64_t>& shape, size_t elem, std::uint64_t nbytes,
                  size_t file_size) {
  if (nbytes > file_size) return false;
  for (auto s : shape) {
    if (s == 0) return nbytes == 0;
  }
  std::uint64_t n = elem;  // every dimension is >= 1 now: n only grows, and must stay <= nbytes
  for (auto s : shape) {
    if (n > file_size / static_cast<std::uint64_t>(s)) return false;
    n *= static_cast<std::uint64_t>(s);
  }
  return n == nbytes;
}
}  // namespace

/// The tensors of a file's bytes (header checked against the size).
static TensorFile parse_tensor_file(std::shared_ptr<const Mapping> map,
                                    const std::filesystem::path& path);

TensorFile read_tensor_file(const std::filesystem::path& path) {
  return read_tensor_file(path, {});
}

TensorFile read_reference_tensor_file(const std::filesystem::path& path) {
  return parse_tensor_file(std::make_shared<const Mapping>(path, nullptr, true), path);
}

TensorFile read_tensor_file(const std::filesystem::path& path,
                            const std::function<void()>& before_read) {
  return parse_tensor_file(std::make_shared<const Mapping>(path, before_read), path);
}

static TensorFile parse_tensor_file(std::shared_ptr<const Mapping> map,
                                    const std::filesystem::path& path) {
  Cursor r(map->base(), map->size(), path);
  if (map->size() < 8) throw BadTensorFile(path, "truncated tensor file");
  if (r.str(8) != std::string(kMagic, 8)) throw BadTensorFile(path, "not a kbx tensor file");
  TensorFile file;
  const auto count = r.get<std::uint32_t>();
  for (std::uint32_t k = 0; k < count; ++k) {
    Tensor t;
    t.name = r.str(r.get<std::uint16_t>());
    std::string dtype = r.str(r.get<std::uint16_t>());
    if (!parse_dtype(dtype, &t.dtype)) throw BadTensorFile(path, "unknown dtype " + dtype);
    const auto ndim = r.get<std::uint8_t>();
    for (int d = 0; d < ndim; ++d) {
      auto s = r.get<std::int64_t>();
      if (s < 0) throw BadTensorFile(path, "negative dimension in " + t.name);
      t.shape.push_back(s);
    }
    const auto nbytes = r.get<std::uint64_t>();
    if (!size_matches(t.shape, dtype_size(t.dtype), nbytes, map->size())) {
      throw BadTensorFile(path, "size of " + t.name + " does not match its shape");
    }
    t.mapped = r.take(nbytes);
    t.mapped_size = nbytes;
    t.mapping = map;
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
    const auto nbytes = static_cast<std::uint64_t>(t.size_bytes());
    put(&nbytes, 8);
    put(t.data(), t.size_bytes());
  }
  if (!out) throw Error(path.string() + ": write failed");
}

Tensor zeros_like(const Tensor& t) {
  Tensor z;
  z.name = t.name;
  z.dtype = t.dtype;
  z.shape = t.shape;
  z.bytes.assign(t.size_bytes(), 0);
  return z;
}

}  // namespace kbx::verdict
