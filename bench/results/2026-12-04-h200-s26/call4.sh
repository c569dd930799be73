#!/usr/bin/env bash
# session 26, call 4: Normalization and Random again (session 25's call 5 cut its run 2 at 80 s
# with 16 of its 18 experts).
export PATH=/opt/torch/.venv/bin:$PATH
OUT=$OUT CATS="Normalization Random" REP_TIMEOUT=130 bash bench/repeatability_gpu.sh 2>&1 | tail -16
