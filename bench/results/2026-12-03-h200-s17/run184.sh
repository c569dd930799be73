#!/usr/bin/env bash
# session 17: the 184 references as candidates (RUN=cold: a fresh database; RUN=warm FROM_DB=...:
# that database's eager timings and footprints); JOBS, REF_WORKERS, LIVE_TASKS pass through to
# bench/pipeline_profile_gpu.sh. The body that ran was session 15's call1.sh, line for line.
exec bash "$(dirname "$0")/../2026-12-03-h200-s15/call1.sh"
