#!/usr/bin/env bash
# session 26, call 3: repeatability of the experts not run with the 250 ms host-bound budget in
# session 25 (its calls 4-5 ran Index, Loss, Reduce, Normalization, Optimizer and Random).
export PATH=/opt/torch/.venv/bin:$PATH
OUT=$OUT CATS="Activation Fusion Math MatrixMultiply Quantization" REP_TIMEOUT=250 bash bench/repeatability_gpu.sh 2>&1 | tail -30
