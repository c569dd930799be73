#pragma once

namespace kbx {

/// The source revision this binary was built from (`git describe --always --dirty` at build
/// time; "unknown" outside a git checkout). Recorded in every run and calibration.
const char* revision();

}  // namespace kbx
