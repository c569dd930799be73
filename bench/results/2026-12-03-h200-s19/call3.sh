#!/usr/bin/env bash
# session 19, call 3: repeatability of the experts of the other categories (B, 46 experts), two
# runs, then bench/compare_runs.py over both calls' databases (A from call 2, carried).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
O=$OUT; export OUT=$O/repB
mkdir -p $OUT && CATS="Activation Index Loss Normalization Optimizer Random Reduce" REP_TIMEOUT=${REP_TIMEOUT:-150} bash bench/repeatability_gpu.sh
