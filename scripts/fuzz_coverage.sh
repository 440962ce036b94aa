#!/bin/sh
# The lines of src/ that the fuzz target reaches (docs/reliability.md):
# fuzz_slub_replay built with gcc --coverage, run on the committed corpus
# alone, then with random inputs too, in rseq and fallback mode; gcov sums
# the library's lines per file and in all.
# Usage: scripts/fuzz_coverage.sh [random inputs, default 1000]
set -eu
random=${1:-1000}
dir=build-cov
root=$(pwd)

cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DSLUB_BENCH=OFF \
	-DCMAKE_C_FLAGS=--coverage >/dev/null
cmake --build "$dir" -j "$(nproc)" --target fuzz_slub_replay >/dev/null
objs="$root/$dir/CMakeFiles/slub_objs.dir/src"

# Lines executed over lines in all of src/, then per file.
summary() {
	(cd "$objs" && gcov -n ./*.o 2>/dev/null) | awk -v what="$1" '
		/^File/ { file = $2; gsub(/\047/, "", file); sub(/.*\//, "", file) }
		/^Lines executed/ {
			split($2, a, ":"); pct = a[2] + 0; n = $4 + 0
			if (file ~ /\.c$/) {
				hit += pct * n / 100; all += n
				per[file] = sprintf("%5.1f%% of %4d", pct, n)
			}
			file = ""	# the totals that follow name no file
		}
		END {
			printf "%s: %.1f%% of %d lines of src/*.c\n", what, 100 * hit / all, all
			for (f in per) printf "  %-18s %s\n", f, per[f]
		}'
}

find "$dir" -name '*.gcda' -delete
"$dir/fuzz/fuzz_slub_replay" -n 0 fuzz/corpus
SLUB_RSEQ=0 "$dir/fuzz/fuzz_slub_replay" -n 0 fuzz/corpus
summary "the corpus, both modes"
"$dir/fuzz/fuzz_slub_replay" -n "$random" -s 1 >/dev/null
SLUB_RSEQ=0 "$dir/fuzz/fuzz_slub_replay" -n "$random" -s 1 >/dev/null
summary "with $random random inputs in each mode"
