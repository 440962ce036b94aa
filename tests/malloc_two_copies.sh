#!/bin/sh
# Two copies of the allocator in one process (tests/malloc_two_copies.c):
# a program linked with libslub.a under LD_PRELOAD=libslub-malloc.so.
#  - threads moved between CPUs and a fork child mix the two copies'
#    blocks, in rseq and in the fallback mode, with no report;
#  - with SLUB_STATS=1 each copy prints its own report, and says which
#    copy it is: the program's cache is in the linked copy's report only;
#  - with SLUB_CONTROL=1 one copy serves the pid's socket and the other
#    says that another copy serves it;
#  - a block of one copy freed to the other is reported by that one in
#    SLUB's words and left alone.
#
#   malloc_two_copies.sh LIBSLUB_MALLOC_SO MALLOC_TWO_COPIES
set -u
lib=$1
prog=$2
name=$(basename "$prog")
. "$(dirname "$0")/checks.sh"
# The failed run's last lines of stderr, where there is one.
fail_err() {
	fail "$1"
	[ -s "$tmp/err" ] && tail -n 8 "$tmp/err"
}

# DESCRIPTION ENV MODE: the program said ok and exited 0.
run() {
	desc=$1
	env $2 LD_PRELOAD="$lib" "$prog" $3 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -ne 0 ] || ! grep -q "^malloc_two_copies: ok$" "$tmp/out"; then
		fail_err "$desc: exit $rc"
		return 1
	fi
	return 0
}

for env in "" "SLUB_RSEQ=0"; do
	if run "churn${env:+ ($env)}" "$env" churn; then
		if grep -q "BUG" "$tmp/err"; then
			fail_err "churn${env:+ ($env)}: a report"
		else
			pass "16 threads moved between CPUs and a fork child, both copies${env:+ ($env)}"
		fi
	fi
done

if run "SLUB_STATS=1" "SLUB_STATS=1" churn; then
	n=$(grep -c "^libslub: SLUB_STATS report for $name\$" "$tmp/err")
	# Each report from its header to the next; the copy is on its second line.
	awk -v dir="$tmp" '/^libslub: SLUB_STATS report for/ { n++ }
		n { print > (dir "/report." n) }' "$tmp/err"
	drop=$(grep -l "^pid [0-9]*, libslub-malloc in libslub-malloc\.so" "$tmp"/report.* 2>/dev/null)
	linked=$(grep -l "^pid [0-9]*, libslub in $name, " "$tmp"/report.* 2>/dev/null)
	if [ "$n" -ne 2 ]; then
		fail_err "SLUB_STATS=1: $n reports, not 2"
	elif [ -z "$drop" ] || [ -z "$linked" ]; then
		fail_err "SLUB_STATS=1: the reports do not say which copy each is: $(grep '^pid ' "$tmp/err" | tr '\n' ' ')"
	elif ! grep -q "^cache name=two-copies " "$linked" ||
		grep -q "^cache name=two-copies " "$drop"; then
		fail_err "SLUB_STATS=1: the program's cache is not in the linked copy's report alone"
	else
		pass "SLUB_STATS=1: a report from each copy, each naming itself"
	fi
fi

mkdir -m 700 "$tmp/ctl"
if run "SLUB_CONTROL=1" "SLUB_CONTROL=1 SLUB_CONTROL_DIR=$tmp/ctl" churn; then
	if grep -q "SLUB_CONTROL=1: not serving: another copy of libslub in this process serves" "$tmp/err"; then
		pass "SLUB_CONTROL=1: one copy serves, the other says so"
	else
		fail_err "SLUB_CONTROL=1: no word of the other copy"
	fi
fi

if run "free() of a kmalloc() block" "" free; then
	if grep -q "^BUG: free(): invalid pointer 0x[0-9a-f]*: not allocated by libslub-malloc" "$tmp/err"; then
		pass "free() of the linked copy's block: reported, left alone"
	else
		fail_err "free() of the linked copy's block: no report"
	fi
fi
if run "kfree() of a malloc() block" "" kfree; then
	if grep -q "^BUG: kfree(): invalid pointer 0x[0-9a-f]*: not allocated by kmalloc" "$tmp/err"; then
		pass "kfree() of the drop-in's block: reported, left alone"
	else
		fail_err "kfree() of the drop-in's block: no report"
	fi
fi

verdict
