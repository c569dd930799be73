export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
export KBX_WORK=/dev/shm/kbx-s41
K=.carry/bin/kbx
mkdir -p /tmp/ex/Activation && cp solutions/expert/Activation/gelu.py /tmp/ex/Activation/
timeout 80 $K eval --method expert --candidates /tmp/ex --device cuda --db /tmp/s.db --fresh 2>&1 | grep -v "^kbx: reference" | tail -4
timeout 80 $K eval --method starved_claim --candidates tests/adversarial/timing/starved_claim --device cuda --db /tmp/s.db 2>&1 | grep -v "^kbx: reference" | tail -6
$K results --db /tmp/s.db --format csv | cut -d, -f1-8
sqlite3 /tmp/s.db "SELECT c.method, a.outcome FROM attempts a JOIN candidates c ON c.id=a.candidate_id ORDER BY a.id" 2>/dev/null || python3 -c "
import sqlite3; print(sqlite3.connect('/tmp/s.db').execute('SELECT c.method, a.outcome FROM attempts a JOIN candidates c ON c.id=a.candidate_id ORDER BY a.id').fetchall())"
