#!/usr/bin/env bash
# session 22, call 2: as call 1 after cb075c6 (the small-result floor on one CPU thread; call 1 spent
# 557 s of the references' 1066 s in it), cold then warm; JOBS=12 REF_WORKERS=8
# and the default cap on live tasks (lanes + reference workers x chunk = 28; session 20 ran 20).
# The body that ran was call 1's, line for line (its files come back named call1-*).
exec bash "$(dirname "$0")/call1.sh"
