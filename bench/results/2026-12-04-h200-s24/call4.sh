#!/usr/bin/env bash
# session 24, call 4 (as run): the two new failures of call 3 replayed outside kbx, then the
# compile workload's sample of 12 tasks with --jobs 1 (230 s), call 2's database.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
python3 bench/make_compile_candidates.py --tasks tasks --out /var/tmp/cands2 --backend inductor --only Math/add,Loss/nll_loss
for t in Math/add Loss/nll_loss; do
  timeout 100 python3 bench/compile_replay.py --cands /var/tmp/cands2 --seed 7 $t > $OUT/replay-${t//\//_}.txt 2>&1 &
done
wait
grep -v ": ok$" $OUT/replay-*.txt | grep -v Traceback | head -30
OUT=$OUT RUNS=serial TIMEOUT=230 SEED=7 FROM_DB=/tmp/cold.db bash bench/compile_workload_gpu.sh 2>&1 | tail -12
cd $OUT && gzip -f compile_workload/*.log; rm -rf compile_workload/cands compile_workload/*.db*
