#!/bin/sh
# slub_debug through the drop-in malloc: malloc_buggy's heap bugs, run
# under LD_PRELOAD=libslub-malloc.so SLUB_DEBUG=FZPU, must each be
# reported in the kernel's format, naming the function at fault, and the
# program must go on to its end. Without SLUB_DEBUG the same runs print
# no report: the checks are slub_debug's.
#
#   malloc_debug.sh LIBSLUB_MALLOC_SO MALLOC_BUGGY
#   malloc_debug.sh --static MALLOC_BUGGY_STATIC
#
# The second form runs malloc_buggy linked -static with libslub-malloc.a:
# the same reports, with addresses where a dynamic program has names (a
# static program has no dynamic symbols for dladdr()).
set -u
lib=$1
buggy=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

if [ "$lib" = --static ]; then
	lib=
else
	case $lib in /*) ;; *) lib=$(pwd)/$lib ;; esac
fi

# at FUNCTION: how a report names a place in FUNCTION; named: how it says so.
at() {
	if [ -n "$lib" ]; then echo "$1+0x"; else echo "0x"; fi
}
named() {
	if [ -n "$lib" ]; then echo "$1 named"; else echo "$1's address given"; fi
}
# The reports below name kmalloc-64 and kmalloc-128: the kernel's classes.
SLUB_KMALLOC_CLASSES=kernel
export SLUB_KMALLOC_CLASSES

# run NAME DEBUG ARG: malloc_buggy ARG preloaded, SLUB_DEBUG=DEBUG (unset
# if empty); output in $tmp/NAME.out and .err, exit status in $tmp/NAME.rc.
run() {
	if [ -n "$2" ]; then
		SLUB_DEBUG=$2 LD_PRELOAD=$lib timeout 60 "$buggy" "$3" \
			>"$tmp/$1.out" 2>"$tmp/$1.err"
	else
		env -u SLUB_DEBUG LD_PRELOAD="$lib" timeout 60 "$buggy" "$3" \
			>"$tmp/$1.out" 2>"$tmp/$1.err"
	fi
	echo $? >"$tmp/$1.rc"
}

# expect NAME WHAT STDOUT TEXT...: exit 0, stdout STDOUT (- for any), each
# TEXT on stderr.
expect() {
	e_name=$1
	e_what=$2
	e_stdout=$3
	shift 3
	e_bad=
	[ "$(cat "$tmp/$e_name.rc")" = 0 ] || e_bad="exit status $(cat "$tmp/$e_name.rc")"
	[ "$e_stdout" = - ] || [ "$(cat "$tmp/$e_name.out")" = "$e_stdout" ] ||
		e_bad="$e_bad; stdout '$(cat "$tmp/$e_name.out")'"
	for t in "$@"; do
		grep -qF -- "$t" "$tmp/$e_name.err" || e_bad="$e_bad; no '$t'"
	done
	if [ -z "$e_bad" ]; then
		passed=$((passed + 1))
		echo "ok: $e_what"
	else
		failed=$((failed + 1))
		echo "FAILED: $e_what: $e_bad"
		sed 's/^/  | /' "$tmp/$e_name.err" | head -n 60
	fi
}

# no_report NAME WHAT STDOUT: exit 0, stdout STDOUT, no BUG on stderr.
no_report() {
	if [ "$(cat "$tmp/$1.rc")" = 0 ] && [ "$(cat "$tmp/$1.out")" = "$3" ] &&
	   ! grep -q BUG "$tmp/$1.err"; then
		passed=$((passed + 1))
		echo "ok: $2"
	else
		failed=$((failed + 1))
		echo "FAILED: $2"
		sed 's/^/  | /' "$tmp/$1.err" "$tmp/$1.out" | head -n 30
	fi
}

run overrun FZPU overrun
expect overrun "a one-byte heap overrun: kmalloc red zone, $(named dup_upper)" \
	LIBSLUB \
	"[kmalloc Redzone overwritten] 0x" \
	"First byte 0x0 instead of 0xcc" \
	"BUG kmalloc-16 (Not tainted): Object corrupt" \
	"Allocated in $(at dup_upper)" \
	"Call Trace:" \
	"FIX kmalloc-16: Restoring kmalloc Redzone 0x"
run overrun0 "" overrun
no_report overrun0 "the overrun without SLUB_DEBUG: unnoticed" LIBSLUB

run double FZPU double
expect double "a double free: reported once, the program goes on" freed \
	"BUG kmalloc-128 (Not tainted): Object already free" \
	"Freed in $(at forget_twice)" \
	"FIX kmalloc-128: Object at 0x"
if [ "$(grep -c '^BUG' "$tmp/double.err")" != 1 ]; then
	failed=$((failed + 1))
	echo "FAILED: the double free was reported $(grep -c '^BUG' "$tmp/double.err") times"
fi

# What count_nodes() reads back is the poison: 0x6b6b6b6b6b6b6b6c.
run uaf FZPU uaf
expect uaf "a write after free: poison, $(named release_node)" 7740398493674204012 \
	"[Poison overwritten] 0x" \
	"BUG kmalloc-64 (Not tainted): Object corrupt" \
	"Freed in $(at release_node)" \
	"FIX kmalloc-64: Restoring Poison 0x"
run uaf0 "" uaf
no_report uaf0 "the write after free without SLUB_DEBUG: unnoticed" 42

echo "$passed passed, $failed failed"
[ $failed = 0 ]
