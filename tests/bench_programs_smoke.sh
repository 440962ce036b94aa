#!/bin/sh
# bench/bench_programs.py, short: every workload at a fiftieth of its size,
# once under each allocator. The table must have a row for each workload
# whose program is installed, with a figure and a ratio for every
# allocator, a geomean row, and no WRONG line; the JSON file must list
# every run. Then a run it must reject: under SLUB_FAIL every malloc of
# libslub's can fail, and python3 then exits with MemoryError, which must
# be reported (WRONG ... under libslub) with exit status 1, while glibc's
# run of the same command is fine.
# Usage: bench_programs_smoke.sh bench_programs.py libslub-malloc.so bench_spawn OUTDIR
set -eu
script=$1
lib=$2
spawn=$3
dir=$4
fail() { echo "FAILED: $1"; exit 1; }
mkdir -p "$dir"
out=$(/usr/bin/python3 "$script" -L "$lib" -X "$spawn" -r 1 -s 0.02 \
	-o "$dir/programs.json") || { echo "$out"; fail "bench_programs exited $?"; }
echo "$out"
echo "$out" | head -n 1 | grep -q "^bench_programs: real programs under each allocator" ||
	fail "no heading"
echo "$out" | grep -q "^WRONG" && fail "a WRONG line"
names="glibc libslub"
for peer in jemalloc:libjemalloc.so.2 tcmalloc:libtcmalloc_minimal.so.4 mimalloc:libmimalloc.so.2; do
	[ -e "/usr/lib/x86_64-linux-gnu/${peer#*:}" ] && names="$names ${peer%%:*}"
done
ncols=$(echo "$names" | wc -w)
# Both tables: the header names every allocator; each workload row has a
# "figure (ratio)" pair per allocator and a best peer.
for table in "wall time" "peak RSS"; do
	block=$(echo "$out" | awk -v t="$table" 'index($0, t) == 1 { on = 1; next } on && /^$/ { exit } on')
	header=$(echo "$block" | head -n 1)
	[ "$(echo "$header" | wc -w)" -eq $((ncols + 2)) ] || fail "$table: header '$header'"
	for w in python-json python-malloc perl-hash sqlite3 gcc git-repack xz-threads sort-threads; do
		if echo "$out" | grep -q "^left out: $w "; then
			continue
		fi
		echo "$block" | awk -v w="$w" -v n="$ncols" '$1 == w {
			ok = NF == 2 * n + 2
			for (i = 2; ok && i <= 2 * n; i += 2)
				ok = $i ~ /^[0-9]+\.[0-9]+$/ && $(i + 1) ~ /^\([0-9]+\.[0-9][0-9]\)$/
			found = ok
		} END { exit !found }' || fail "$table: no row for $w"
	done
	echo "$block" | grep -q "^geomean " || fail "$table: no geomean"
done
/usr/bin/python3 - "$dir/programs.json" "$ncols" <<'PY' || fail "programs.json"
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
wl = {r["workload"] for r in d["runs"]}
assert not d["wrong"], d["wrong"]
assert len(d["runs"]) == n * len(wl) and len(wl) + len(d["skipped"]) == 8, (len(d["runs"]), wl)
assert all(r["maxrss_kb"] > 500 and r["wall_s"] > 0 for r in d["runs"])
PY
# The rejected run.
if bad=$(SLUB_FAIL=object=30,seed=1 /usr/bin/python3 "$script" -L "$lib" -X "$spawn" \
		-r 1 -s 0.02 -w python-json -a glibc,libslub); then
	echo "$bad"
	fail "a failing program was not reported"
fi
echo "$bad" | grep -q "^WRONG: python-json under libslub: exit status 1" ||
	{ echo "$bad"; fail "no WRONG line for libslub"; }
echo "$bad" | grep -q "under glibc" && { echo "$bad"; fail "glibc's run reported"; }
echo "ok: bench_programs"
