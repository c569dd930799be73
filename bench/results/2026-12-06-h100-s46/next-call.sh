#!/usr/bin/env bash
# Prepared in session 46 for the next GPU session (name nvidia-h200; carry .carry/; timeout_s 570):
# the host's facts first (host.txt: CPU model, CPUs, host_loop_ms; since session 46 every run's
# environment records them too), then session 43's call: the 184 references as their own
# candidates, cold then warm. H100 hosts come in two speeds (host_loop_ms about 0.21 ms: warm
# 145-167 s, sessions 44-45; 0.41-0.45 ms: warm 201-204 s, sessions 44 and 46): read host.txt
# before comparing a warm time with an earlier one. Then, within 30 s on the same machine,
# bench/results/2026-12-06-h100-s45/next-call2.sh (timeout_s 560): the defaults beside
# --reference-worker-life chunk.
export PATH=/opt/torch/.venv/bin:$PATH
PYTHONPATH=$PWD/python python3 -c "
from kbx_worker.calibrate_mode import host_facts
print('host:', host_facts())" 2>&1 | tee $OUT/host.txt
lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|Hypervisor|MHz' | sed 's/^/lscpu: /' | tee -a $OUT/host.txt
bash bench/results/2026-12-06-h100-s43/next-call.sh
