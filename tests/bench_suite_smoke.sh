#!/bin/sh
# The benchmark suite's driver end to end, very short: every workload, a
# few presets and peers, one repetition of 0.05 s a point; then the files
# it writes must be there and parse, with a result for every point it ran.
# Each workload's threads do one round of work before they look at the
# stop flag, so a point whose threads a loaded machine starved for the
# whole 0.05 s still has a result.
# Usage: bench_suite_smoke.sh bench_suite outdir
set -eu
suite=$1
out=$2
rm -rf "$out"
"$suite" -d 0.05 -r 1 -l 2 -p 2009,default -a glibc,libslub-malloc \
	-R rr=1 -R hackbench=1 -R stream=64,16384 -R fsmark=1 -R fastpath=64 \
	-P none -o "$out" >"$out.log" 2>&1 || { cat "$out.log"; exit 1; }
for f in suite.txt suite.json suite.csv; do
	[ -s "$out/$f" ] || { echo "no $out/$f"; cat "$out.log"; exit 1; }
done
# Every workload's table, the counters, the summary.
for w in rr hackbench tbench stream fsmark fastpath; do
	grep -q "^== $w:" "$out/suite.txt" || { echo "no $w table"; exit 1; }
done
grep -q '^Hmean send-16384' "$out/suite.txt"
grep -q '^Amean 1 ' "$out/suite.txt"
grep -q '^Summary' "$out/suite.txt"
grep -q '^default  *order-1 ' "$out/suite.txt"
# The CSV: a header and one line per point run: 6 workloads' rows (rr 1,
# hackbench 1, tbench 2, stream 2, fsmark 1, fastpath 2) under 4 columns,
# less tbench's order-1 row under the 2 malloc columns.
lines=$(($(wc -l <"$out/suite.csv") - 1))
[ "$lines" -eq $((9 * 4 - 2)) ] || { echo "suite.csv: $lines points"; exit 1; }
# The JSON parses, and libslub's columns carry the SLUB counters.
python3 - "$out/suite.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [c["name"] for c in d["columns"]] == ["2009", "default", "glibc", "libslub-malloc"]
for wl in d["workloads"]:
    for row in wl["rows"]:
        for name, cell in row["cells"].items():
            assert cell["samples"] and cell["mean"] > 0, (wl["name"], name)
            assert ("counters" in cell) == (name != "glibc"), (wl["name"], name)
            assert cell["rss_mib"] > 0
PY
# -I reports a run again from its suite.csv: the same tables.
"$suite" -I "$out" -o "$out/again" -P none >/dev/null
sed -n '/^== rr/,$p' "$out/suite.txt" >"$out/tables"
sed -n '/^== rr/,$p' "$out/again/suite.txt" | cmp -s - "$out/tables" ||
	{ echo "-I: the tables differ"; exit 1; }
# ... under the header of the machine the run was made on, not this one.
mkdir -p "$out/other"
cp "$out/suite.csv" "$out/other/"
sed 's/"nproc": [0-9]*, "cpu_model": "[^"]*"/"nproc": 99, "cpu_model": "Made-up CPU"/' \
	"$out/suite.json" >"$out/other/suite.json"
"$suite" -I "$out/other" -o "$out/other/out" -P none >/dev/null
grep -q '^bench_suite: 99 CPUs (Made-up CPU), Linux ' "$out/other/out/suite.txt" ||
	{ echo "-I: not the run's machine:"; head -1 "$out/other/out/suite.txt"; exit 1; }

# made_up DIR COLUMN:API:VALUE...: a suite.csv of rr's 4-thread row, one
# repetition per VALUE, for -I to report.
made_up() {
	dir=$1
	shift
	mkdir -p "$dir"
	{
		echo "workload,row,param,threads,column,api,rep,metric,unit,secs,ops,rss_kb,user_s,sys_s,order,objs"
		for c in "$@"; do
			col=${c%%:*}
			rest=${c#*:}
			rep=0
			for v in $(echo "${rest#*:}" | tr : ' '); do
				echo "rr,4,1,4,$col,${rest%%:*},$rep,$v,trans/s,0.2,1000,2048,0.1,0.1,0,0"
				rep=$((rep + 1))
			done
		done
	} >"$dir/suite.csv"
}

# The statistics, on numbers made up for it: Hmean per cell, the change
# against the first column, '*' where Welch's t-test puts it outside the
# noise. a: 100 x 3; b: 200 x 3 (no spread: significant); c: 100, 300,
# 150, whose Hmean is 150 and whose spread hides the change.
made_up "$out/stats" a:kmem:100:100:100 b:kmem:200:200:200 c:kmem:100:300:150
"$suite" -I "$out/stats" -o "$out/stats/out" -P none >"$out.log" 2>&1 ||
	{ cat "$out.log"; exit 1; }
grep -Eq '^Hmean 4 +100\.00 \(   0\.00%\) +200\.00 \* 100\.00%\* +150\.00 \(  50\.00%\)$' \
	"$out/stats/out/suite.txt" ||
	{ echo "statistics:"; grep Hmean "$out/stats/out/suite.txt"; exit 1; }

# The summary compares each row's median, which one slow repetition (an
# rr pair put across CPUs) does not move: libslub-malloc's reps 90, 110,
# 120 and 10 (median 100, Hmean 31) against glibc's 100 x 4 are 1.00;
# default's 50 x 3 and 500 (median 50, Hmean 65) 0.50.
made_up "$out/median" default:kmem:50:50:50:500 glibc:malloc:100:100:100:100 \
	libslub-malloc:malloc:90:110:120:10
"$suite" -I "$out/median" -o "$out/median/out" -P none >"$out.log" 2>&1 ||
	{ cat "$out.log"; exit 1; }
grep -Eq '^rr +default +0\.50 +1\.00 +glibc ' "$out/median/out/suite.txt" ||
	{ echo "summary:"; tail -4 "$out/median/out/suite.txt"; exit 1; }

# The plots, where matplotlib is installed: drawn from the JSON of a run
# of one workload (drawing is what takes time here).
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
	"$suite" -w tbench -d 0.02 -r 1 -p default -a glibc \
		-P "$(dirname "$0")/../scripts/bench_plot.py" -o "$out/plot" \
		>"$out.log" 2>&1 || { cat "$out.log"; exit 1; }
	for png in tbench summary; do
		[ -s "$out/plot/$png.png" ] || { echo "no $png.png"; exit 1; }
	done
fi
echo "bench_suite smoke: ok"
