#!/usr/bin/env bash
# session 18, call 4: repeatability, all 87 experts twice, back to back (bench/repeatability_gpu.sh;
# session 17 ran 71 of them: max 10.9%).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
REP_TIMEOUT=${REP_TIMEOUT:-260} bash bench/repeatability_gpu.sh
