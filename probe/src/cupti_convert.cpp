#include "cupti_convert.h"

namespace kbx::probe {
namespace {

// The fields every activity kind shares.
template <class Activity>
Record common(Kind kind, const Activity& a) {
  Record r;
  r.kind = kind;
  r.device_id = a.deviceId;
  r.context_id = a.contextId;
  r.stream_id = a.streamId;
  r.correlation_id = a.correlationId;
  r.start_ns = a.start;
  r.end_ns = a.end;
  if (a.start == 0 && a.end == 0) r.flags |= kNoTimestamp;
  if (a.graphId != 0) r.flags |= kGraphLaunched;
  if (a.isDeviceLaunched != 0) r.flags |= kDeviceLaunched;
  return r;
}

}  // namespace

Record from_cupti(const CUpti_ActivityKernel10& kernel) {
  Record r = common(Kind::Kernel, kernel);
  r.grid = {kernel.gridX, kernel.gridY, kernel.gridZ};
  r.block = {kernel.blockX, kernel.blockY, kernel.blockZ};
  r.set_name(kernel.name != nullptr ? kernel.name : "");
  return r;
}

Record from_cupti(const CUpti_ActivityMemcpy6& copy) {
  Record r = common(Kind::Memcpy, copy);
  r.detail = copy.copyKind;
  r.bytes = copy.bytes;
  return r;
}

Record from_cupti(const CUpti_ActivityMemset4& set) {
  Record r = common(Kind::Memset, set);
  r.detail = set.value;
  r.bytes = set.bytes;
  return r;
}

}  // namespace kbx::probe
