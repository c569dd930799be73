#!/usr/bin/env bash
# Prepared in session 29 for the next GPU session (about 5 min): repeatability at the new
# defaults (CPU-first quiet host), the experts of half the categories twice back to back
# (session 26 with the old defaults: median 0.41%, max 2.51%); the other half in a second call
# with CATS="Index Loss Reduce Normalization Optimizer Random ...".
export PATH=/opt/torch/.venv/bin:$PATH
OUT=$OUT CATS="${CATS:-Activation Fusion Math MatrixMultiply Quantization}" REP_TIMEOUT=250 bash bench/repeatability_gpu.sh 2>&1 | tail -30
