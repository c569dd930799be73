#!/usr/bin/env bash
# Session 36, call 6: the timer no longer holds a host-waiting call's batch behind a spin. The
# Index experts twice (masked_select waits on the host), then each host-waiting case's host time
# of a batch's first call against the others' (call 3: 31 ms against 0.7 ms, the spin's wait).
#   OUT=/dir bash bench/results/2026-12-05-h100-s36/call6.sh
cd "$(dirname "$0")/../../.."
CATS=Index REP_TIMEOUT=${REP_TIMEOUT:-90} bash bench/repeatability_gpu.sh
cd $OUT && mkdir -p x && tar xzf call3.tgz -C x && for k in 1 2; do
  echo "run $k: waits_on_host cases, candidate host ms of a batch's first call / the others (n)"
  sqlite3 x/rep$k.db "select r.task || ':' || c.name, round(avg(case when s.idx % 10 = 0 then s.ms end), 2),
      round(avg(case when s.idx % 10 <> 0 then s.ms end), 2), count(*), round(c.cand_ms, 4), round(c.eager_ms, 4)
    from case_results c join results r on r.id = c.result_id
    join samples s on s.result_id = c.result_id and s.case_name = c.name and s.who = 'candidate_host'
    where c.timing_flags like '%waits_on_host%' group by 1"
done
rm -rf x
