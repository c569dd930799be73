#!/usr/bin/env bash
# session 23: the 184 references as candidates through session 15's call1.sh, with a reference
# cache when REF_CACHE names one (KEEP_REF_CACHE=1: start from what it holds; REF_CACHE_MB: its
# cap; both read by bench/pipeline_profile_gpu.sh). RUN=cold (a fresh database) or RUN=warm
# FROM_DB=... (that database's eager timings). Until c027fc2 this file was a copy of that script
# with these two changes, which it now takes itself (off by default).
exec bash "$(dirname "$0")/../2026-12-03-h200-s15/call1.sh"
