#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"

namespace kbx::verdict {

/// Element types a .kbt file can hold (python/kbx_worker/tensorio.py writes them).
enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool, C64, C128 };

const char* dtype_name(DType d);
bool parse_dtype(const std::string& name, DType* out);
size_t dtype_size(DType d);
bool is_floating(DType d);  ///< float or complex
bool is_complex(DType d);
double dtype_eps(DType d);  ///< machine epsilon of the (real part's) floating type

/// The bytes of a tensor file, read into memory once; tensors read from the file point into it.
class Mapping;

/// A named tensor: dtype, shape and raw C-contiguous bytes, either owned (`bytes`) or a view
/// into the bytes of the file it was read from (`mapping`).
struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> bytes;  ///< owned data (empty for a mapped tensor)
  std::shared_ptr<const Mapping> mapping;
  const unsigned char* mapped = nullptr;
  size_t mapped_size = 0;

  const unsigned char* data() const { return mapping ? mapped : bytes.data(); }
  size_t size_bytes() const { return mapping ? mapped_size : bytes.size(); }
  std::int64_t numel() const;
  /// Values [first, first + count) as doubles; complex tensors count (re, im) as two values.
  void to_doubles(size_t first, size_t count, double* out) const;
  /// Number of scalar values to_doubles covers (numel, twice that for complex).
  size_t value_count() const;
  /// All values as doubles; complex tensors give (re, im) pairs.
  std::vector<double> to_doubles() const;
  /// Same dtype, shape and bytes.
  bool bitwise_equal(const Tensor& other) const;
  std::string shape_string() const;
};

/// The ordered tensors of one .kbt file.
struct TensorFile {
  std::vector<Tensor> tensors;
  const Tensor* find(const std::string& name) const;
};

/// A tensor file that is unusable: not a regular file (a FIFO, symlink, folder or device in its
/// place), shorter than its header says, shrunk while read, or malformed.
struct BadTensorFile : Error {
  BadTensorFile(const std::filesystem::path& file, const std::string& what)
      : Error(file.string() + ": " + what), path(file) {}
  std::filesystem::path path;
};

/// Reads a .kbt file into memory. The file is opened without following a symlink and without
/// blocking (O_NOFOLLOW | O_NONBLOCK), must be a regular file, and is read with pread (never
/// mapped, so a file truncated meanwhile gives an error, not SIGBUS). Throws BadTensorFile
/// naming the path on any of those problems.
TensorFile read_tensor_file(const std::filesystem::path& path);
/// The same, calling before_read between the file's fstat and its reading (tests change the file
/// there to show that a file truncated after it was opened gives an error).
TensorFile read_tensor_file(const std::filesystem::path& path,
                            const std::function<void()>& before_read);

/// Reads a .kbt file that kbx's own reference worker wrote (references, shadows, inputs), in a
/// folder no candidate sees or writes: the same checks, but mapped instead of copied, since
/// nothing truncates it while it is read. Never for a candidate's file.
TensorFile read_reference_tensor_file(const std::filesystem::path& path);

/// Writes a .kbt file (tests and synthesized candidates use it).
void write_tensor_file(const std::filesystem::path& path, const std::vector<Tensor>& tensors);

/// A tensor of the given dtype and shape filled with zeros.
Tensor zeros_like(const Tensor& t);

}  // namespace kbx::verdict
