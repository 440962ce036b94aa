#!/bin/sh
# SPDX-License-Identifier: MIT
#
# hot_text.sh LIB HOT_LD: src/hot.ld took effect in LIB, and its list
# still names the library's functions.
#
# - LIB has a .text.slub_hot section at the head of its text, and the
#   functions every process runs (malloc's and free's fast and slow paths,
#   the bring-up, the rseq abort handlers' section) lie inside it: ld
#   applied the script, and nothing a process runs at start-up was left
#   among the cold code;
# - every name HOT_LD lists is a function of LIB inside that section, but
#   for a few clones whose suffixes (.constprop.0, .isra.0) differ between
#   -O2 and -O3: a list gone stale (functions renamed or split) fails here,
#   with the names, until scripts/hot-functions.sh makes it again.
set -eu
lib=$1 hot_ld=$2
fail=0

# [13] .text.slub_hot PROGBITS 00000000000046f0 0046f0 0113de ...
bounds=$(readelf -SW "$lib" | sed 's/^ *\[ *[0-9]*\] *//' |
	awk '$1 == ".text.slub_hot" { print $3, $5 }')
if [ -z "$bounds" ]; then
	echo "hot_text: $lib has no .text.slub_hot section (src/hot.ld not applied)"
	exit 1
fi
set -- $bounds
start=$((0x$1)) end=$((0x$1 + 0x$2))
text=$(readelf -SW "$lib" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".text" { print $3 }')
if [ $((0x$text)) -lt "$end" ]; then
	echo "hot_text: .text.slub_hot does not come before .text"
	fail=1
fi
echo "hot_text: .text.slub_hot $((end - start)) bytes at $(printf 0x%x "$start")"

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
nm "$lib" | awk '$2 ~ /^[tT]$/ { print $3, $1 }' > "$tmp"

inside() {	# inside NAME: 0 if NAME is a function of LIB in the section
	addr=$(awk -v n="$1" '$1 == n { print $2; exit }' "$tmp")
	[ -n "$addr" ] || return 2
	a=$((0x$addr))
	[ "$a" -ge "$start" ] && [ "$a" -lt "$end" ]
}

for f in malloc free calloc realloc slub_malloc_slow slub_free_slow \
	 alloc_from_pcs_slow free_to_pcs_slow kmalloc_init slub_rseq_init \
	 background_thread_init runs_purge_tick; do
	if ! inside "$f"; then
		echo "hot_text: $f is not in .text.slub_hot"
		fail=1
	fi
done

missing=0 outside=0 listed=0
for f in $(sed -n 's,^ *\*([^ )]*)[[:space:]]*/\* \([^ ]*\) \*/$,\1,p' "$hot_ld"); do
	listed=$((listed + 1))
	rc=0
	inside "$f" || rc=$?
	case $rc in
	0) ;;
	2) missing=$((missing + 1)); echo "hot_text: $f (listed) is not in $lib" ;;
	*) outside=$((outside + 1)); echo "hot_text: $f (listed) lies outside .text.slub_hot" ;;
	esac
done
echo "hot_text: $listed listed, $missing missing, $outside outside"
if [ "$listed" -lt 50 ] || [ "$outside" -gt 0 ] || [ "$missing" -gt 5 ]; then
	echo "hot_text: src/hot.ld is stale: run scripts/hot-functions.sh"
	fail=1
fi
[ "$fail" = 0 ] && echo "hot_text: passed"
exit "$fail"
