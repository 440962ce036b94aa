#!/bin/sh
# bench_burst end to end, short: glibc and libslub-malloc, a 32 MiB burst,
# 0.3 s of waiting. With a 50 ms purge delay libslub must have given most
# of the freed memory back by the end of the wait; with purging off it
# must still hold it, and malloc_trim() must give it back. glibc's
# malloc_trim() must shrink glibc's heap (the column is what it says).
# Sleeping through the wait (-q), libslub runs nothing that purges and
# keeps it; with its background thread (libslub-bg) it gives it back.
# That run waits 1 s: in 0.3 s the thread, starved on a loaded machine
# (ctest -j2 beside other jobs), once gave back 38% where 40% was asked.
# Usage: bench_burst_smoke.sh bench_burst libslub-malloc.so
set -eu
bb=$1
lib=$2
run() {
	d=$1
	s=$2
	shift 2
	SLUB_CONFIG="page_alloc/purge_delay_ms=$d" "$bb" -L "$lib" -m 32 -s "$s" -r 1 "$@" 2>&1
}
# row NAME: "peak freed waited trimmed" in MiB, from the table in $out
row() {
	echo "$out" | awk -v n="$1" '$1 == n && NF >= 5 { print $2, $3, $4, $5 }'
}
check() {
	echo "$2" | awk "{ exit !($3) }" ||
		{ echo "$1: $2 fails $3"; echo "$out"; exit 1; }
}
out=$(run 50 0.3 -a glibc,libslub)
check "glibc" "$(row glibc)" '$1 >= 30 && $4 < 0.6 * $2'
check "libslub, purge after 50 ms" "$(row libslub)" '$1 >= 30 && $3 < 0.6 * $2'
out=$(run -1 0.3 -a glibc,libslub)
check "libslub, no purge" "$(row libslub)" '$3 >= 0.9 * $2 && $4 < 0.6 * $2'
echo "$out"
out=$(run 50 1.0 -a libslub,libslub-bg -q)
check "libslub, asleep" "$(row libslub)" '$3 >= 0.9 * $2'
check "libslub-bg, asleep" "$(row libslub-bg)" '$3 < 0.6 * $2'
echo "$out"
