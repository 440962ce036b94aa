#!/bin/sh
# bench/list_growth.py --compare, short: each allocator runs the CPython
# list growth in turn (the script itself fails if any child fails or if
# their outputs differ), and the table has a row for glibc at 1.00, for
# the drop-in as it is and with the free objects' pages kept, and for
# each peer installed, each with its peak and one figure a repetition.
# Usage: bench_list_growth_smoke.sh list_growth.py libslub-malloc.so
set -eu
script=$1
lib=$2
out=$(/usr/bin/python3 "$script" --compare "$lib" 800 60 2) ||
	{ echo "list_growth --compare failed"; exit 1; }
echo "$out"
fail() { echo "FAILED: $1"; exit 1; }
echo "$out" | head -n 1 | grep -q "^list_growth 800 60, peak RSS (KB), median of 2, ratio to glibc$" ||
	fail "no heading"
# NAME: its row, "  NAME  PEAK  RATIO  [A, B]", with a plausible peak.
row() {
	echo "$out" | awk -v n="$1" '$1 == n && NF == 5 && $2 > 1000 &&
		$3 ~ /^[0-9]+\.[0-9][0-9]$/ && $4 ~ /^\[[0-9]+,$/ { found = 1 }
		END { exit !found }' || fail "no row for $1"
}
echo "$out" | grep -q "^  glibc  *[0-9]*  1\.00  \[" || fail "glibc's row is not at 1.00"
for name in glibc libslub libslub-keep; do
	row "$name"
done
for peer in jemalloc:libjemalloc.so.2 tcmalloc:libtcmalloc_minimal.so.4 mimalloc:libmimalloc.so.2; do
	if [ -e "/usr/lib/x86_64-linux-gnu/${peer#*:}" ]; then
		row "${peer%%:*}"
	fi
done
echo "ok: list_growth --compare"
