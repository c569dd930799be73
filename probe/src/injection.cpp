// libkbx_probe.so: the CUDA injection library. CUDA loads it through CUDA_INJECTION64_PATH and
// calls InitializeInjection() inside cuInit; from then on every kernel, memcpy and memset of the
// process is recorded with CUPTI's activity API and written, as probe records, to the
// supervisor's pipe (KBX_PROBE_FD) or to a file (KBX_PROBE_FILE). See docs/probe.md.
#include <cupti.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

#include "collector.h"
#include "config.h"
#include "cupti_convert.h"
#include "fd_writer.h"
#include "kbx/probe_records.h"
#include "slot_request.h"

#define KBX_PROBE_EXPORT extern "C" __attribute__((visibility("default")))

namespace kbx::probe {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{8} << 20;  // one CUPTI activity buffer
constexpr std::size_t kBufferAlign = 8;                     // CUPTI requires 8-byte alignment
// Queued records above which a buffer callback writes them out instead of waiting for a flush.
constexpr std::size_t kDrainThreshold = std::size_t{1} << 16;
constexpr CUpti_ExternalCorrelationKind kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// Process-wide probe state. Lock order: write_mutex before state_mutex.
struct State {
  std::mutex write_mutex;                 // serialises taking and writing records
  std::mutex state_mutex;                 // guards collector
  Collector collector;                    // guarded by state_mutex
  std::optional<FdWriter> writer;         // guarded by write_mutex
  std::uint32_t flush_sequence = 0;       // guarded by write_mutex
  std::atomic<bool> active{false};        // CUPTI recording is on and records have somewhere to go
  std::atomic<bool> failed{false};        // a write failed: the stream has ended early
  std::atomic<std::uint64_t> dropped{0};  // records CUPTI reported as dropped
  long pid = 0;                           // the process that initialised the probe
};

// Never destroyed: CUPTI threads and the exit flush may run after static destructors.
State& state() {
  static State* s = new State;
  return *s;
}

void warn(const char* format, ...) __attribute__((format(printf, 1, 2)));
void warn(const char* format, ...) {
  std::va_list args;
  va_start(args, format);
  std::fputs("kbx_probe: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
}

std::uint64_t now_ns() {
  std::uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

Record marker(Kind kind, std::uint64_t external_id = 0) {
  Record r;
  r.kind = kind;
  r.start_ns = r.end_ns = now_ns();
  r.external_id = external_id;
  r.thread_id = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  return r;
}

Record error_record(const char* what, CUptiResult result) {
  Record r = marker(Kind::Error);
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  r.set_name(std::string(what) + ": " + (text != nullptr ? text : "unknown CUPTI error"));
  r.detail = static_cast<std::uint32_t>(result);
  return r;
}

// Queues an Error record for a failed CUPTI call; returns whether the call succeeded.
bool check(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) return true;
  const Record r = error_record(what, result);
  warn("%s", r.name_view().data());
  State& s = state();
  std::lock_guard lock(s.state_mutex);
  s.collector.add_marker(r);
  return false;
}

bool owner_process() {
  return ::getpid() == state().pid;
}

// Takes the queued records (followed by a Flush record when `flush_flags` is set) and writes
// them. The caller holds write_mutex. Returns the records written, or -1 when writing failed.
int write_queued(State& s, std::optional<std::uint16_t> flush_flags) {
  std::vector<Record> records;
  {
    std::lock_guard lock(s.state_mutex);
    if (flush_flags) {
      Record f = marker(Kind::Flush);
      f.flags = *flush_flags;
      f.detail = ++s.flush_sequence;
      f.bytes = s.dropped.load();
      s.collector.add_marker(f);
    }
    records = s.collector.take();
  }
  if (!s.writer || s.writer->broken()) return -1;
  if (records.empty()) return 0;
  std::vector<std::byte> bytes;
  bytes.reserve(records.size() * kRecordSize);
  for (const Record& r : records) append_record(bytes, r);
  if (!s.writer->write_all(bytes)) {
    s.failed.store(true);
    warn("writing records failed, the stream ends here: %s", s.writer->error().c_str());
    return -1;
  }
  return static_cast<int>(records.size());
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void collect(Collector& collector, const CUpti_Activity& activity) {
  switch (activity.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      collector.add_activity(from_cupti(reinterpret_cast<const CUpti_ActivityKernel10&>(activity)));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& copy = reinterpret_cast<const CUpti_ActivityMemcpy6&>(activity);
      collector.add_activity(from_cupti(copy), copy.runtimeCorrelationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET:
      collector.add_activity(from_cupti(reinterpret_cast<const CUpti_ActivityMemset4&>(activity)));
      break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& ext = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(activity);
      if (ext.externalKind == kExternalKind)
        collector.add_external(ext.correlationId, ext.externalId);
      break;
    }
    default:  // DRIVER and RUNTIME API records are enabled only so that CUPTI emits the
      break;  // external-correlation records; they are not kept.
  }
}

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer,
                               std::size_t /*size*/, std::size_t valid_size) {
  State& s = state();
  std::size_t queued = 0;
  {
    std::lock_guard lock(s.state_mutex);
    CUpti_Activity* activity = nullptr;
    while (valid_size > 0 &&
           cuptiActivityGetNextRecord(buffer, valid_size, &activity) == CUPTI_SUCCESS) {
      collect(s.collector, *activity);
    }
    queued = s.collector.pending();
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS)
    s.dropped += dropped;
  std::free(buffer);
  // A worker that never flushes must not grow memory without bound; whoever writes now takes
  // these records too, so a busy writer is not waited for.
  if (queued >= kDrainThreshold && owner_process()) {
    std::unique_lock write(s.write_mutex, std::try_to_lock);
    if (write.owns_lock()) write_queued(s, std::nullopt);
  }
}

// CUPTI flush, then write everything queued followed by a Flush record.
int flush_all(std::uint16_t flush_flags) {
  State& s = state();
  if (!s.active.load() || !owner_process()) return 0;
  if (s.failed.load()) return -1;
  check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  std::lock_guard write(s.write_mutex);
  return write_queued(s, flush_flags);
}

void flush_at_exit() {
  flush_all(kExitFlush);
}

// The GPU's timing slot asked for at the first GPU work of an armed span (kbx_probe_slot_arm):
// a CUPTI callback subscriber on the driver and runtime APIs, enabled only while armed, so that
// no other call of the process (a timed loop's launches) pays for it.
struct SlotArm {
  std::mutex mutex;  // held while asking: a second thread's GPU work waits for the answer too
  CUpti_SubscriberHandle subscriber = nullptr;  // guarded by mutex
  bool subscribe_failed = false;                // guarded by mutex
  std::atomic<bool> armed{false};
  bool taken = false;  // guarded by mutex
  int request_fd = -1;
  int event_fd = -1;
};

SlotArm& slot_arm() {
  static SlotArm* a = new SlotArm;
  return *a;
}

void enable_slot_callbacks(SlotArm& a, bool enable) {
  const std::uint32_t on = enable ? 1 : 0;
  check(cuptiEnableDomain(on, a.subscriber, CUPTI_CB_DOMAIN_DRIVER_API),
        "cuptiEnableDomain(DRIVER)");
  check(cuptiEnableDomain(on, a.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API),
        "cuptiEnableDomain(RUNTIME)");
}

void CUPTIAPI on_api_call(void* /*userdata*/, CUpti_CallbackDomain domain,
                          CUpti_CallbackId /*cbid*/, const void* data) {
  SlotArm& a = slot_arm();
  if (!a.armed.load(std::memory_order_acquire)) return;
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  const auto* call = static_cast<const CUpti_CallbackData*>(data);
  if (call->callbackSite != CUPTI_API_ENTER || call->functionName == nullptr ||
      !is_gpu_work_api(call->functionName) || !owner_process()) {
    return;
  }
  std::lock_guard lock(a.mutex);
  if (!a.armed.load()) return;  // another thread asked meanwhile
  std::string error;
  if (!ask_for_slot(a.event_fd, a.request_fd, call->functionName, &error)) {
    // As the Python side does (SystemExit(3)): the supervisor ended the job, or the pipe broke.
    warn("asking for the timing slot at %s: %s", call->functionName, error.c_str());
    ::_exit(3);
  }
  a.taken = true;
  a.armed.store(false, std::memory_order_release);
}

void initialize() {
  State& s = state();
  s.pid = ::getpid();
  const Config config = read_config([](const char* name) { return std::getenv(name); }, s.pid);
  if (!config.problem.empty()) {
    warn("%s; the probe stays inert", config.problem.c_str());
    return;
  }
  std::string error;
  if (config.sink == Config::Sink::Fd) {
    s.writer = FdWriter::adopt(config.fd, config.write_timeout, &error);
  } else if (config.sink == Config::Sink::File) {
    s.writer = FdWriter::create_file(config.path, config.write_timeout, &error);
  } else {
    return;  // no sink configured, or another process owns the stream
  }
  if (!s.writer) {
    warn("%s; the probe stays inert", error.c_str());
    return;
  }

  Header header;
  header.pid = static_cast<std::uint32_t>(s.pid);
  cuptiGetVersion(&header.cupti_version);
  header.start_ns = now_ns();
  std::vector<std::byte> bytes;
  append_header(bytes, header);
  std::lock_guard write(s.write_mutex);
  if (!s.writer->write_all(bytes)) {
    warn("writing the header failed: %s; the probe stays inert", s.writer->error().c_str());
    return;
  }

  // Kernels are essential; without the others the stream still times kernels, and the Error
  // records say what is missing.
  bool recording = check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                         "cuptiActivityRegisterCallbacks");
  recording = recording && check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                                 "cuptiActivityEnable(CONCURRENT_KERNEL)");
  if (recording) {
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(MEMCPY)");
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "cuptiActivityEnable(MEMSET)");
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION),
          "cuptiActivityEnable(EXTERNAL_CORRELATION)");
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), "cuptiActivityEnable(DRIVER)");
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "cuptiActivityEnable(RUNTIME)");
  }
  write_queued(s, std::nullopt);  // Error records, if any, reach the supervisor at once
  if (!recording) return;
  s.active.store(true);
  std::atexit(flush_at_exit);
}

}  // namespace
}  // namespace kbx::probe

using namespace kbx::probe;

/// Called by CUDA (inside cuInit) when the library is named by CUDA_INJECTION64_PATH.
KBX_PROBE_EXPORT int InitializeInjection(void) {
  static std::once_flag once;
  std::call_once(once, initialize);
  return 1;
}

/// Tags the GPU work the calling thread launches from now on with `id` (non-zero).
KBX_PROBE_EXPORT void kbx_probe_push(unsigned long long id) {
  if (!state().active.load() || !owner_process()) return;
  // Id 0 means "none" in the records; it is still pushed, so that pushes and pops stay paired.
  if (id == 0) check(CUPTI_ERROR_INVALID_PARAMETER, "kbx_probe_push: external id 0 is reserved");
  const Record push = marker(Kind::Push, id);
  if (!check(cuptiActivityPushExternalCorrelationId(kExternalKind, id),
             "cuptiActivityPushExternalCorrelationId")) {
    return;
  }
  State& s = state();
  std::lock_guard lock(s.state_mutex);
  s.collector.add_marker(push);
}

/// Ends the calling thread's innermost kbx_probe_push.
KBX_PROBE_EXPORT void kbx_probe_pop(void) {
  if (!state().active.load() || !owner_process()) return;
  std::uint64_t last = 0;
  if (!check(cuptiActivityPopExternalCorrelationId(kExternalKind, &last),
             "cuptiActivityPopExternalCorrelationId")) {
    return;
  }
  const Record pop = marker(Kind::Pop, last);
  State& s = state();
  std::lock_guard lock(s.state_mutex);
  s.collector.add_marker(pop);
}

/// Delivers all CUPTI records (the caller synchronises the device first) and writes them with a
/// Flush record. Returns the records written, 0 when the probe is inert, -1 once a write failed.
KBX_PROBE_EXPORT int kbx_probe_flush(void) {
  return flush_all(0);
}

/// 1 while the probe records and its stream is intact, else 0.
KBX_PROBE_EXPORT int kbx_probe_active(void) {
  const State& s = state();
  return s.active.load() && !s.failed.load() && owner_process() ? 1 : 0;
}

/// Arms the timing slot's request at the calling process's next GPU work (a kernel or graph
/// launch, a copy or a fill, from any thread): the worker's "slot_wanted" goes on `event_fd`
/// then, and the call waits there for "go" on `request_fd`. Returns 1 when armed, 0 when the
/// probe is inert or CUPTI refused a subscriber (the caller asks for the slot itself then).
KBX_PROBE_EXPORT int kbx_probe_slot_arm(int request_fd, int event_fd) {
  if (!state().active.load() || !owner_process() || request_fd < 0 || event_fd < 0) return 0;
  SlotArm& a = slot_arm();
  std::lock_guard lock(a.mutex);
  if (a.subscriber == nullptr) {
    if (a.subscribe_failed) return 0;
    if (!check(cuptiSubscribe(&a.subscriber, on_api_call, nullptr), "cuptiSubscribe")) {
      a.subscriber = nullptr;
      a.subscribe_failed = true;
      return 0;
    }
  }
  a.request_fd = request_fd;
  a.event_fd = event_fd;
  a.taken = false;
  a.armed.store(true, std::memory_order_release);
  enable_slot_callbacks(a, true);
  return 1;
}

/// Ends the armed span. Returns 1 when the slot was asked for and granted inside it, else 0
/// (nothing armed, or no GPU work happened: the caller asks for the slot itself).
KBX_PROBE_EXPORT int kbx_probe_slot_disarm(void) {
  SlotArm& a = slot_arm();
  std::lock_guard lock(a.mutex);
  a.armed.store(false, std::memory_order_release);
  if (a.subscriber != nullptr) enable_slot_callbacks(a, false);
  const bool taken = a.taken;
  a.taken = false;
  return taken ? 1 : 0;
}
