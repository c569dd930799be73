// Conversion of CUPTI activity records to probe records (needs the CUPTI headers, not the GPU).
#pragma once

#include <cupti_activity.h>

#include "kbx/probe_records.h"

namespace kbx::probe {

/// A Kernel record from a CONCURRENT_KERNEL activity; external_id is left 0.
Record from_cupti(const CUpti_ActivityKernel10& kernel);
/// A Memcpy record from a MEMCPY activity; external_id is left 0.
Record from_cupti(const CUpti_ActivityMemcpy6& copy);
/// A Memset record from a MEMSET activity; external_id is left 0.
Record from_cupti(const CUpti_ActivityMemset4& set);

}  // namespace kbx::probe
