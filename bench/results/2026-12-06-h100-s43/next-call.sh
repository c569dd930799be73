#!/usr/bin/env bash
# Prepared in session 43 for the next GPU session, on an H200 if one is lent (name nvidia-h200;
# carry .carry/; timeout_s 570): issue 14's first acceptance point with a reference worker's
# finished task handed to the lanes at once (f31fd22). Session 42's STEP=refs call: the 184
# references cold (which also warms the machine: a fresh machine's first run is about 20% slower,
# session 43 call 1), then warm at the defaults; one tarball and summary.txt. Then the reference
# workers' lives in the warm run (hello, done, exit, frozen: bench/slot_profile.py since session 43).
# Compare: H200 warm 185.9 s (session 42, without the hand-on); H100 warm 166.4 s (session 43).
STEP=refs bash bench/results/2026-12-06-h100-s42/next-calls.sh
tar xzOf /tmp/o-warm/base/call1-warm.tgz warm/slot_profile.txt 2>/dev/null |
  grep "reference workers:" | sed "s/^/warm: /" | tee -a $OUT/summary.txt
