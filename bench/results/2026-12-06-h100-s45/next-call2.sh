#!/usr/bin/env bash
# Prepared in session 45 for the next GPU session, on an H200 if one is lent: the second call on
# the same machine, right after bench/results/2026-12-06-h100-s43/next-call.sh (name nvidia-h200,
# carry .carry/, timeout_s 560, within the 30 s the machine stays warm). Two warm runs of the 184
# references on the first call's eager timings: the defaults (a reference worker kept across its
# lane's chunks since session 45), then --reference-worker-life chunk (a worker per chunk). On an
# H100 the kept workers took 147.6 and 145.0 s against 162.1 and 165.6 s (this folder's README);
# the H200's warm run was bound by its references (session 42), where they should help more.
VARIANTS="${VARIANTS:-base perchunk}" bash bench/results/2026-12-06-h100-s44/next-call2.sh
