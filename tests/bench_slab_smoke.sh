#!/bin/sh
# bench_slab end to end, very short: the pair and one-cache producer/
# consumer workloads, one repetition of 0.02 s. Its tables must be there,
# with the libslub lock waits, and the JSON must parse and carry them.
# Where mimalloc is linked in (it exports __libc_malloc too), the glibc
# column must still be libc.so.6's: bench_slab refuses to run otherwise,
# and says which it called.
# Usage: bench_slab_smoke.sh bench_slab outdir
set -eu
bs=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
"$bs" -w pair,prodcons -r 1 -d 0.02 -t 2 -o "$out/slab.json" >"$out/slab.txt" 2>&1 ||
	{ cat "$out/slab.txt"; exit 1; }
grep -q "the glibc column calls libc.so.6's __libc_malloc" "$out/slab.txt" ||
	{ echo "which glibc the column called is not said"; cat "$out/slab.txt"; exit 1; }
grep -q '^libslub lock waits per 1,000 operations' "$out/slab.txt" ||
	{ echo "no lock-wait table"; cat "$out/slab.txt"; exit 1; }
grep -Eq '^prodcons +[0-9.]+ \([0-9.]+\) +[0-9.]+ \([0-9.]+\)' "$out/slab.txt" ||
	{ echo "no prodcons lock-wait row"; cat "$out/slab.txt"; exit 1; }
python3 - "$out/slab.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
text = json.dumps(d)
assert '"lock_waits"' in text and '"lock_sleeps"' in text, "no lock counters in the JSON"
PY
echo "bench_slab smoke: ok"
