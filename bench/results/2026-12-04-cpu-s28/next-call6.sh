#!/usr/bin/env bash
# Prepared in session 28 for the next GPU session: session 27's next-call2.sh (the 184
# references warm with KBX_QUIET_CPU_FIRST=cuda) with KBX_SLOT_AT=early: a candidate asks for
# the slot after its first small case and takes it between the later ones (the rest run after
# its hand-back). In sessions 25 and 26 the slot sat idle 30-40 s of these runs, 70-85% of it
# while the job that took it next was running its small cases (slot-idle-who.txt here);
# next-call2.sh prints the same view of this run at its end.
KBX_SLOT_AT=early bash bench/results/2026-12-04-h200-s27/next-call2.sh
