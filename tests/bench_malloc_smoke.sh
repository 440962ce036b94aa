#!/bin/sh
# bench_malloc end to end, very short: glibc and libslub-malloc only (the
# peers need not be installed), every workload, three repetitions of
# 0.05 s. The three tables and the JSON must be there, and libslub's
# ratios must be what its samples give: the ratio of the medians, and the
# median of the ratios within each repetition; producer/consumer's rings
# at their fullest must be there and within what the rings can hold.
# The cxx workloads run where bench_malloc_cxx was built beside it (a C++
# compiler), and are left out with a note where not.
# Usage: bench_malloc_smoke.sh bench_malloc libslub-malloc.so outdir
set -eu
bm=$1
lib=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
"$bm" -L "$lib" -a glibc,libslub -r 3 -d 0.05 -t 4 -o "$out/bm.json" \
	>"$out/bm.txt" 2>&1 || { cat "$out/bm.txt"; exit 1; }
workloads="single prodcons oversub calloc aligned realloc"
if [ -x "$(dirname "$bm")/bench_malloc_cxx" ]; then
	workloads="$workloads cxx cxx-unsized"
elif ! grep -q 'NOTE: no bench_malloc_cxx' "$out/bm.txt"; then
	echo "no bench_malloc_cxx, and no note that cxx is left out"
	cat "$out/bm.txt"
	exit 1
fi
for w in $workloads; do
	[ "$(grep -c "^$w " "$out/bm.txt")" -eq 3 ] ||
		{ echo "$w: not in each of the three tables"; cat "$out/bm.txt"; exit 1; }
done
grep -q '^libslub / best peer, repetition by repetition' "$out/bm.txt"
python3 - "$out/bm.json" $workloads <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
assert sorted(d["workloads"]) == sorted(sys.argv[2:]), sorted(d["workloads"])
def close(a, b):
    return abs(a - b) <= 1e-3 * abs(b)
for name, w in d["workloads"].items():
    g, l = w["glibc"], w["libslub"]
    assert w["best_peer_throughput"] == "glibc" and w["best_peer_rss"] == "glibc", name
    assert len(g["mops"]) == len(l["mops"]) == 3, name
    assert min(g["mops"] + l["mops"] + g["peak_rss_kb"] + l["peak_rss_kb"]) > 0, name
    assert close(l["ratio_throughput_best_peer"], l["mops_median"] / g["mops_median"]), name
    assert close(l["ratio_rss_best_peer"], l["peak_rss_kb_median"] / g["peak_rss_kb_median"]), name
    pt = statistics.median(a / b for a, b in zip(l["mops"], g["mops"]))
    pr = statistics.median(a / b for a, b in zip(l["peak_rss_kb"], g["peak_rss_kb"]))
    assert close(l["paired_ratio_throughput"], pt), (name, l["paired_ratio_throughput"], pt)
    assert close(l["paired_ratio_rss"], pr), (name, l["paired_ratio_rss"], pr)
    assert "paired_ratio_throughput" not in g, name
    # Producer/consumer's rings at their fullest: there, and no more than
    # two rings of 1,024 blocks of at most 1 KiB can hold. One repetition
    # may find them empty at every sample (a loaded machine gives main few
    # samples, and a consumer can keep up), but not all six.
    for a in (g, l):
        assert ("rings_peak_kb" in a) == (name == "prodcons"), name
        if name == "prodcons":
            assert all(0 <= k <= 2 * 1024 for k in a["rings_peak_kb"]), a["rings_peak_kb"]
    if name == "prodcons":
        assert max(g["rings_peak_kb"] + l["rings_peak_kb"]) > 0, (g, l)
PY
grep -q '^RSS/rings ' "$out/bm.txt" ||
	{ echo "no rings table under the RSS table"; cat "$out/bm.txt"; exit 1; }
