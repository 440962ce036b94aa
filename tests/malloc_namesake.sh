#!/bin/sh
# A program with functions of its own named as libslub's API, under
# LD_PRELOAD=libslub-malloc.so (tests/malloc_namesake.c): the drop-in's
# calls between its own parts must never reach them, nor libslub.so's
# when the program dlopen()s it and calls its API. First, that the
# program has a namesake for every function the library exports beside
# the preemptible ones that src/malloc.dynlist names, so a function added
# to the API is covered or this test says which is not.
#
#   malloc_namesake.sh LIBSLUB_MALLOC_SO MALLOC_NAMESAKE DYNLIST LIBSLUB_SO
set -u
lib=$1
prog=$2
dynlist=$3
libslub=$4
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() {
	failed=$((failed + 1))
	echo "FAILED: $1"
}

# The dynamic list's names and patterns, as grep -x patterns.
sed -e 's|/\*.*\*/||' "$dynlist" | sed -n '/^[[:space:]]*{/,/^[[:space:]]*}/p' |
	tr ';{}' '\n\n\n' | sed -e 's/[[:space:]]//g' -e '/^$/d' -e '/^\*/d' \
	-e 's/\*/.*/g' >"$tmp/preemptible"
if ! grep -qx 'malloc' "$tmp/preemptible"; then
	fail "could not read the preemptible names from $dynlist"
fi
nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "W" || $2 == "i" { print $3 }' |
	grep -vxf "$tmp/preemptible" | sort >"$tmp/bound"
"$prog" --names | sort >"$tmp/namesakes"
missing=$(comm -23 "$tmp/bound" "$tmp/namesakes")
if [ ! -s "$tmp/bound" ]; then
	fail "no exported function of the library outside the dynamic list"
elif [ -n "$missing" ]; then
	fail "exported, bound inside the library, without a namesake in $prog: $(echo $missing)"
else
	pass "a namesake for each of the $(wc -l <"$tmp/bound") other exported functions"
fi

# DESCRIPTION COMMAND...: the program must say it is ok.
run_case() {
	desc=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 0 ] && grep -q "malloc_namesake: ok" "$tmp/out"; then
		pass "$desc"
	else
		fail "$desc: exit $rc"
		tail -n 5 "$tmp/out" "$tmp/err"
	fi
}

# Plain; with the exit report (slabinfo's code); with the control socket
# (slub_control_start() from the constructor) in a private directory.
mkdir -m 700 "$tmp/ctl"
for env in "" "SLUB_STATS=1" "SLUB_CONTROL=1 SLUB_CONTROL_DIR=$tmp/ctl"; do
	run_case "namesakes never called${env:+ ($env)}" \
		env $env LD_PRELOAD="$lib" "$prog"
done
run_case "namesakes never called by libslub.so" "$prog" --dlopen "$libslub"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
