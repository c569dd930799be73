#!/usr/bin/env bash
# session 17, call 3: the experts of every category but Activation (71 of 87: the device time
# left after two failed machine starts did not cover all 87 twice) twice, back to back, fresh
# databases, no reference cache, with the worker's CPU pool made at its start
# (start_intra_op_pool) and the settle off. Ran as `REP_TIMEOUT=200 bash call3.sh`; the body that
# ran is now bench/repeatability_gpu.sh, line for line.
CATS=${CATS:-Fusion Index Loss Math MatrixMultiply Normalization Optimizer Quantization Random Reduce} \
  REP_TIMEOUT=${REP_TIMEOUT:-200} exec bash bench/repeatability_gpu.sh
