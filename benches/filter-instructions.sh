#!/usr/bin/env bash
# Instructions of a declared query's filter against the hand-written `doc!` (issue 37's budget:
# <= 1.05x), and of the whole declared query against the driver's `find` builder it replaces:
# benches/filter_cost.rs run under valgrind's callgrind once per mode, the empty run
# subtracted, divided by the number of calls.
#
#   bash benches/filter-instructions.sh [CALLS]     # default 20000
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-20000}
command -v valgrind >/dev/null || {
    echo "needs valgrind (apt-get install valgrind)" >&2
    exit 1
}
binary=$(cargo bench --bench filter_cost --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "filter_cost" and m.get("executable"):
        print(m["executable"])')
[[ -x $binary ]] || { echo "no filter_cost binary" >&2; exit 1; }
count() {
    local out
    out=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$binary" "$1" "$calls" 2>&1)
    echo "$out" | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
declare -A total
for mode in none doc filter query find; do
    total[$mode]=$(count "$mode")
done
per() { echo "(${total[$1]} - ${total[none]}) / $calls" | bc -l; }
printf '%-8s %12s instructions per call\n' mode ""
for mode in doc filter query find; do
    printf '%-8s %12.0f\n' "$mode" "$(per "$mode")"
done
printf 'filter / doc!: %.3f (budget 1.05)\n' "$(echo "$(per filter) / $(per doc)" | bc -l)"
printf 'declared query / driver find builder: %.3f\n' "$(echo "$(per query) / $(per find)" | bc -l)"
