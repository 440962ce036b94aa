#!/bin/sh
# The many-CPU run: bench_malloc, bench_slab and bench_page_alloc at half or
# all the CPUs, and the seeds' workloads of bench_suite on
# a machine with more CPUs than the development one, each step under its own
# time limit so that a run cut short still leaves what it finished.
#
# Usage: scripts/many_cpu_bench.sh OUTDIR [BUILD] [PEERS] [SECONDS]
#   OUTDIR   where the reports go (one folder per step, and machine.txt)
#   BUILD    a Release build folder (default build-release); rebuilt in
#            /tmp/build-many when its programs do not run on this machine
#   PEERS    a folder of peer libraries (libjemalloc.so.2 ...) to copy into
#            /usr/lib/x86_64-linux-gnu where they are missing (needs root)
#   SECONDS  the time the whole run may take (default 480)
set -u
out=${1:?usage: many_cpu_bench.sh OUTDIR [BUILD] [PEERS] [SECONDS]}
build=${2:-build-release}
peers=${3:-}
budget=${4:-480}
start=$(date +%s)
mkdir -p "$out"
# Absolute, as LD_PRELOAD and -L need it (and the rebuild below is).
case $build in /*) ;; *) build=$PWD/$build ;; esac

left() { echo $((budget - ($(date +%s) - start))); }
log() { echo "[$(($(date +%s) - start)) s] $*"; }

{
	echo "cpus: $(nproc) online, $(getconf _NPROCESSORS_CONF) configured"
	uname -a
	grep -m1 'model name' /proc/cpuinfo
	grep -m1 PRETTY_NAME /etc/os-release 2>/dev/null
	ldd --version 2>&1 | head -1
	grep MemTotal /proc/meminfo
	cat /proc/loadavg
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

if [ -n "$peers" ] && [ -d "$peers" ]; then
	for f in "$peers"/*.so*; do
		dst=/usr/lib/x86_64-linux-gnu/$(basename "$f")
		[ -e "$dst" ] || cp "$f" "$dst" 2>/dev/null || log "cannot install $f"
	done
fi

# A build made elsewhere runs here only with a glibc at least as new.
if ! "$build/bench/bench_malloc" -h 2>&1 | grep -q usage; then
	log "the programs in $build do not run here; building in /tmp/build-many"
	cmake -S . -B /tmp/build-many -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
	cmake --build /tmp/build-many -j "$(nproc)" >>"$out/build.log" 2>&1 ||
		{ log "build failed"; tail -20 "$out/build.log"; exit 1; }
	build=/tmp/build-many
fi

# Which per-CPU mode the library gets here (rseq, or the locked fallback).
LD_PRELOAD=$build/libslub-malloc.so SLUB_STATS=1 ls / 2>&1 >/dev/null |
	sed -n 2p | tee -a "$out/machine.txt"

step() {	# step NAME SECONDS command...
	name=$1 secs=$2
	shift 2
	l=$(left)
	[ "$secs" -gt "$l" ] && secs=$l
	if [ "$secs" -lt 20 ]; then
		log "$name: skipped, no time left"
		return
	fi
	log "$name: up to $secs s"
	timeout -k 5 "$secs" "$@" >"$out/$name.txt" 2>&1
	log "$name: exit $?"
}

lib=$build/libslub-malloc.so
bm=$build/bench/bench_malloc
bs=$build/bench/bench_suite
step malloc 120 "$bm" -L "$lib" -r 3 -W single,prodcons,oversub -o "$out/malloc.json"
step malloc-p8 40 "$bm" -L "$lib" -r 3 -p "$(($(nproc) / 2))" -W prodcons
# One kmem_cache between many CPUs: the barn and list_lock, with their lock waits.
step slab 40 "$build/bench/bench_slab" -t "$(($(nproc) / 2))" -w pair,prodcons
step page 40 "$build/bench/bench_page_alloc" -t "$(nproc)" -r 3 -d 0.5
# The seeds' workloads one at a time: bench_suite writes its tables at the end.
for w in rr tbench stream hackbench; do
	mkdir -p "$out/suite-$w"
	step "suite-$w" 150 "$bs" -w "$w" -r 3 -P none -o "$out/suite-$w"
done
log "done"
