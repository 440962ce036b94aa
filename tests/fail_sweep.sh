#!/bin/sh
# tools/fail-sweep on malloc_buggy: with every allocation failed in turn,
# "unchecked" dies in exactly one run, whose trace names copy_name(), the
# function that writes through malloc's NULL, and the sweep exits 1;
# "checked" survives every run and the sweep exits 0, having failed each
# of the program's allocations once. With -j 3 the report is the same.
# Bad usage exits 2.
#
#   fail_sweep.sh FAIL_SWEEP LIBSLUB_MALLOC_SO MALLOC_BUGGY
set -u
sweep=$1
lib=$2
buggy=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bad=0

check() {
	if ! eval "$2"; then
		echo "FAILED: $1"
		sed 's/^/  | /' "$out"
		bad=1
	else
		echo "ok: $1"
	fi
}

bash "$sweep" -L "$lib" -- "$buggy" unchecked >"$out" 2>&1
rc=$?
check "unchecked: exit 1" '[ $rc -eq 1 ]'
check "unchecked: one run died, of SIGSEGV" \
	'[ "$(grep -c "^N=[0-9]*: SIG" "$out")" -eq 1 ] && grep -q "^N=[0-9]*: SIGSEGV$" "$out"'
check "unchecked: the trace, under the process, names copy_name" \
	'grep -A1 "^N=" "$out" | grep -q "^    in malloc_buggy (pid [0-9]*):$" &&
	 grep -A2 "^N=" "$out" | grep -q "^     copy_name+0x"'
check "unchecked: the sweep went past the last allocation" \
	'grep -q "injected no failure" "$out" && grep -q "1 died of a signal" "$out"'

# Three runs at once: the same report, in the same order.
grep -v "^     \|^    in" "$out" >"$out.j1"
bash "$sweep" -L "$lib" -j 3 -- "$buggy" unchecked 2>&1 | grep -v "^     \|^    in" >"$out.j3"
check "unchecked, -j 3: the same report as one at a time" 'cmp -s "$out.j1" "$out.j3"'
rm -f "$out.j1" "$out.j3"

bash "$sweep" -L "$lib" -- "$buggy" checked >"$out" 2>&1
rc=$?
check "checked: exit 0, no run died" \
	'[ $rc -eq 0 ] && grep -q ", 0 died of a signal$" "$out" && ! grep -q "^N=" "$out"'
check "checked: every allocation failed once, then a run without" \
	'grep -q "injected no failure" "$out"'

bash "$sweep" -L "$lib" -s bogus -- "$buggy" checked >"$out" 2>&1
rc=$?
check "bad site: exit 2" '[ $rc -eq 2 ]'
bash "$sweep" -L "$lib" -- /nonexistent/program >"$out" 2>&1
rc=$?
check "no such program: exit 2" '[ $rc -eq 2 ] && grep -q "cannot run" "$out"'
env -u LD_PRELOAD bash "$sweep" -- "$buggy" checked >"$out" 2>&1
rc=$?
check "nothing preloaded: exit 2, said" '[ $rc -eq 2 ] && grep -q "nothing preloads" "$out"'
exit $bad
