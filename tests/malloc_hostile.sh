#!/bin/sh
# libslub-malloc.so in environments that production allocators meet and
# test suites rarely make (each case was a crash or a hole before):
#  - /sys and /proc hidden (a mount namespace with tmpfs over them) and
#    the process allowed only its highest CPU: nr_cpu_ids must still
#    bound the CPU numbers rseq reports;
#  - exit() from a thread with the smallest stack, with SLUB_STATS=1's
#    report running in the destructor on it;
#  - a setuid program must not read SLUB_* variables: the library takes
#    them through secure_getenv() only, never getenv().
#
#   malloc_hostile.sh LIBSLUB_MALLOC_SO MALLOC_THREADS
#
# The first case is skipped with a message where user namespaces are
# not allowed or the process may run on CPU 0 only.
set -u
lib=$1
threads=$2
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case $lib in /*) ;; *) lib=$(pwd)/$lib ;; esac

pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() {
	failed=$((failed + 1))
	echo "FAILED: $1"
	shift
	for f in "$@"; do tail -n 5 "$f"; done
}

# The highest CPU this process may run on.
last_cpu() {
	sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status |
		tr ',' '\n' | sed 's/.*-//' | sort -n | tail -n 1
}

cpu=$(last_cpu)
if [ "${cpu:-0}" -eq 0 ]; then
	echo "skipped: hidden /sys: this process may run on CPU 0 only"
elif ! unshare -rm true 2>/dev/null; then
	echo "skipped: hidden /sys: no user namespaces here"
else
	unshare -rm sh -c "mount -t tmpfs none /sys && mount -t tmpfs none /proc &&
		exec taskset -c $cpu env LD_PRELOAD='$lib' '$threads'" \
		>"$tmp/hidden.out" 2>"$tmp/hidden.err"
	if [ $? -eq 0 ] && grep -q "malloc_threads: ok" "$tmp/hidden.out"; then
		pass "/sys and /proc hidden, CPU $cpu only"
	else
		fail "/sys and /proc hidden, CPU $cpu only" "$tmp/hidden.out" "$tmp/hidden.err"
	fi
fi

SLUB_STATS=1 LD_PRELOAD=$lib "$threads" --exit-on-small-stack \
	>"$tmp/small.out" 2>"$tmp/small.err"
if [ $? -eq 0 ] && grep -q "malloc_threads: ok" "$tmp/small.out" &&
	grep -q "SLUB_STATS report" "$tmp/small.err"; then
	pass "exit() on a 16 KiB stack with SLUB_STATS=1"
else
	fail "exit() on a 16 KiB stack with SLUB_STATS=1" "$tmp/small.out" "$tmp/small.err"
fi

if ! command -v nm >/dev/null; then
	fail "no nm to list the library's imports"
elif nm -D --undefined-only "$lib" | grep -qw getenv; then
	fail "the library imports getenv(): a setuid program would read SLUB_*"
elif nm -D --undefined-only "$lib" | grep -qw secure_getenv; then
	pass "SLUB_* read through secure_getenv() only"
else
	fail "the library imports neither getenv() nor secure_getenv()"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
