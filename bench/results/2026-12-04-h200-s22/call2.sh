#!/usr/bin/env bash
# session 22, call 2: as call 1 after cb075c6 (the small-result floor on one CPU thread; call 1 spent
# 557 s of the references' 1066 s in it), cold then warm; JOBS=12 REF_WORKERS=8
# and the default cap on live tasks (lanes + reference workers x chunk = 28; session 20 ran 20).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
export JOBS=${JOBS:-12} REF_WORKERS=${REF_WORKERS:-8}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
RUN=cold RUN_TIMEOUT=${COLD_TIMEOUT:-320} bash bench/results/2026-12-03-h200-s17/run184.sh | grep -v '^  idle\|^  gaps'
cp $OUT/cold.db /tmp/cold.db
RUN=warm FROM_DB=/tmp/cold.db RUN_TIMEOUT=${WARM_TIMEOUT:-235} bash bench/results/2026-12-03-h200-s17/run184.sh | grep -v '^  idle\|^  gaps'
gzip -f $OUT/cold.db
rm -f $OUT/warm.db
