#!/usr/bin/env bash
# session 17, call 3: all 87 experts twice, back to back, fresh databases, no reference cache
# (session 15's call3.sh), with the worker's CPU pool made at its start (start_intra_op_pool) and
# the settle off. (The supervisor attacks on cuda, attacks.py, did not fit in the device time
# left: two failed machine starts took 210 s.)
REP_TIMEOUT=${REP_TIMEOUT:-240} bash bench/results/2026-12-03-h200-s15/call3.sh
