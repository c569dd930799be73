// Per-call analyses over probe records: grouping, spans, busy time, unattributed work and the
// origin of kernels (see kbx/probe_records.h).
#include <algorithm>
#include <array>

#include "kbx/probe_records.h"

namespace kbx::probe {

std::map<std::uint64_t, std::vector<Record>> group_by_external_id(std::span<const Record> records) {
  std::map<std::uint64_t, std::vector<Record>> groups;
  for (const Record& r : records) {
    if (r.is_activity() && r.external_id != 0) groups[r.external_id].push_back(r);
  }
  return groups;
}

std::optional<Interval> device_span(std::span<const Record> records) {
  std::optional<Interval> span;
  for (const Record& r : records) {
    if (!r.is_timed()) continue;
    if (!span) {
      span = Interval{r.start_ns, r.end_ns};
    } else {
      span->start_ns = std::min(span->start_ns, r.start_ns);
      span->end_ns = std::max(span->end_ns, r.end_ns);
    }
  }
  return span;
}

std::uint64_t busy_ns(std::span<const Record> records) {
  std::vector<Interval> intervals;
  for (const Record& r : records) {
    if (r.is_timed() && r.end_ns > r.start_ns) intervals.push_back({r.start_ns, r.end_ns});
  }
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
  std::uint64_t total = 0;
  std::optional<Interval> run;  // the merged interval being extended
  for (const Interval& iv : intervals) {
    if (run && iv.start_ns <= run->end_ns) {
      run->end_ns = std::max(run->end_ns, iv.end_ns);
      continue;
    }
    if (run) total += run->length_ns();
    run = iv;
  }
  if (run) total += run->length_ns();
  return total;
}

std::optional<Interval> call_window(std::span<const Record> records, std::uint64_t external_id) {
  std::optional<std::uint64_t> push_ns;
  std::optional<std::uint64_t> pop_ns;
  std::vector<Record> own;
  for (const Record& r : records) {
    if (r.external_id != external_id) continue;
    if (r.kind == Kind::Push) {
      push_ns = push_ns ? std::min(*push_ns, r.start_ns) : r.start_ns;
    } else if (r.kind == Kind::Pop) {
      pop_ns = pop_ns ? std::max(*pop_ns, r.start_ns) : r.start_ns;
    } else if (r.is_activity()) {
      own.push_back(r);
    }
  }
  const std::optional<Interval> span = device_span(own);
  if (!push_ns && !span) return std::nullopt;
  Interval window;
  window.start_ns = push_ns ? *push_ns : span->start_ns;
  window.end_ns = std::max(pop_ns.value_or(window.start_ns), span ? span->end_ns : 0);
  return window;
}

std::vector<Record> unattributed(std::span<const Record> records, Interval window) {
  std::vector<Record> out;
  for (const Record& r : records) {
    if (!r.is_timed() || r.external_id != 0) continue;
    // Overlap with the half-open window; a zero-length record counts when it lies inside it.
    if (r.start_ns < window.end_ns &&
        (r.end_ns > window.start_ns || r.start_ns >= window.start_ns)) {
      out.push_back(r);
    }
  }
  return out;
}

std::string_view origin_name(KernelOrigin origin) {
  switch (origin) {
    case KernelOrigin::Candidate: return "candidate";
    case KernelOrigin::Library: return "library";
    case KernelOrigin::Inductor: return "inductor";
    case KernelOrigin::Unknown: return "unknown";
  }
  return "unknown";
}

namespace {

// Name prefixes of kernels from PyTorch (aten, c10), cuBLAS/cuBLASLt, cuDNN, CUTLASS, CUB,
// Thrust, flash-attention and NCCL, mangled and demangled.
constexpr auto kLibraryPrefixes = std::to_array<std::string_view>({
    "void at::",       "at::",          "_ZN2at",
    "_ZN3c10",         "void c10::",    "_ZN6at_cuda_detail",
    "cutlass",         "_ZN7cutlass",   "void cutlass::",
    "_ZN3cub",         "void cub::",    "cub::",
    "_ZN6thrust",      "void thrust::", "_ZN5flash",
    "flash::",         "void flash::",  "_ZN13pytorch_flash",
    "pytorch_flash::", "fmha_cutlass",  "xmma_",
    "_ZN4xmma",        "nvjet",         "ampere_",
    "volta_",          "turing_",       "maxwell_",
    "hopper_",         "sm50_",         "sm60_",
    "sm70_",           "sm75_",         "sm80_",
    "sm86_",           "sm89_",         "sm90_",
    "sm100_",          "sm120_",        "ncclKernel",
    "ncclDevKernel",   "gemmk1_kernel",
});

// Substrings that mark library kernels wherever they appear: cuBLAS and cuDNN names, also as
// template arguments of mangled kernels ("_Z10dot_kernelIfLi128ELi0E13cublasDotParams...").
constexpr auto kLibrarySubstrings =
    std::to_array<std::string_view>({"cublas", "cudnn", "at::native::"});

// Names torch.compile (Inductor) gives the Triton kernels it generates.
constexpr auto kInductorPrefixes = std::to_array<std::string_view>({
    "triton_poi_",
    "triton_per_",
    "triton_red_",
    "triton_tem_",
    "triton_for_",
    "triton_unk_",
});

// Substrings of PyTorch's copy, cast and fill kernels, mangled or demangled: Copy.cu's
// direct_copy_kernel_cuda and {float16,bfloat16,float8}_copy_kernel_cuda (contiguous, clone,
// expand(...).contiguous(), transposing copies, .to(dtype)), copy_device_to_device, FillFunctor
// (zeros, full, fill_, zero_) and cat's CatArrayBatchedCopy.
constexpr auto kGlueSubstrings = std::to_array<std::string_view>({
    "direct_copy_kernel",
    "_copy_kernel_cuda",
    "copy_device_to_device",
    "FillFunctor",
    "CatArrayBatchedCopy",
});

bool any_prefix(std::string_view name, std::span<const std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return name.starts_with(p); });
}

// A mangled free function whose parameters name aten or c10 types ("_Z...N2at4cuda...").
bool mangled_with_aten_types(std::string_view name) {
  return name.starts_with("_Z") && (name.find("N2at") != std::string_view::npos ||
                                    name.find("N3c10") != std::string_view::npos);
}

// Older Triton appended "_" and a specialisation suffix such as "0d1d2de" to the function name.
bool is_specialisation_suffix(std::string_view rest) {
  if (rest.size() < 2 || rest[0] != '_' || rest[1] < '0' || rest[1] > '9') return false;
  return std::all_of(rest.begin() + 1, rest.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'); });
}

bool names_candidate_function(std::string_view name, std::string_view fn, bool truncated) {
  if (fn.empty()) return false;
  if (name == fn) return true;
  if (name.starts_with(fn) && is_specialisation_suffix(name.substr(fn.size()))) return true;
  return truncated && fn.size() >= name.size() && fn.starts_with(name);
}

}  // namespace

bool looks_like_library_kernel(std::string_view name) {
  if (any_prefix(name, kLibraryPrefixes) || mangled_with_aten_types(name)) return true;
  return std::any_of(kLibrarySubstrings.begin(), kLibrarySubstrings.end(),
                     [&](std::string_view s) { return name.find(s) != std::string_view::npos; });
}

bool looks_like_glue_kernel(std::string_view name) {
  return looks_like_library_kernel(name) &&
         std::any_of(kGlueSubstrings.begin(), kGlueSubstrings.end(),
                     [&](std::string_view s) { return name.find(s) != std::string_view::npos; });
}

KernelOrigin classify_kernel(std::string_view name, std::span<const std::string> triton_functions,
                             bool truncated) {
  if (looks_like_library_kernel(name)) return KernelOrigin::Library;
  for (const std::string& fn : triton_functions) {
    if (names_candidate_function(name, fn, truncated)) return KernelOrigin::Candidate;
  }
  if (any_prefix(name, kInductorPrefixes)) return KernelOrigin::Inductor;
  return KernelOrigin::Unknown;
}

KernelOrigin classify_kernel(const Record& record, std::span<const std::string> triton_functions) {
  return classify_kernel(record.name_view(), triton_functions, record.has(kNameTruncated));
}

double Attribution::candidate_share() const {
  const std::uint64_t total = kernel_ns();
  return total == 0 ? 0.0 : static_cast<double>(candidate_ns) / static_cast<double>(total);
}

Attribution attribute(std::span<const Record> records,
                      std::span<const std::string> triton_functions) {
  Attribution a;
  for (const Record& r : records) {
    if (!r.is_timed()) continue;
    if (r.kind != Kind::Kernel) {
      a.copy_ns += r.duration_ns();
      continue;
    }
    switch (classify_kernel(r, triton_functions)) {
      case KernelOrigin::Candidate: a.candidate_ns += r.duration_ns(); break;
      case KernelOrigin::Library:
        (looks_like_glue_kernel(r.name_view()) ? a.glue_ns : a.library_ns) += r.duration_ns();
        break;
      case KernelOrigin::Inductor: a.inductor_ns += r.duration_ns(); break;
      case KernelOrigin::Unknown: a.unknown_ns += r.duration_ns(); break;
    }
  }
  return a;
}

}  // namespace kbx::probe
