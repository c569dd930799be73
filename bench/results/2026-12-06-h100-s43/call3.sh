#!/usr/bin/env bash
# Session 43, call 3 (carry .carry/, timeout_s 290): call2.sh with a 30 s warm-up and a 200 s
# limit, on aca5af8: heavy tasks spread over the first chunks (heavy_tasks_early: one last in
# every second chunk), reverted after this call measured no gain (167.5 s against call 2's 166.4 s).
WARMUP_S=30 RUN_S=200 NAME=call3 bash "$(dirname "$0")/call2.sh"
