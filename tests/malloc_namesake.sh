#!/bin/sh
# A program with functions of its own named as libslub's API, under
# LD_PRELOAD=libslub-malloc.so (tests/malloc_namesake.c): the drop-in's
# calls between its own parts must never reach them, nor libslub.so's
# when the program dlopen()s it and calls its API. First, that the
# program has a namesake for every function the library exports beside
# the preemptible ones that src/malloc.dynlist names, so a function added
# to the API is covered or this test says which is not.
#
# Then the static libraries as installed (scripts/static-object.sh):
#  - each defines, globally, exactly what its shared library exports, and
#    every function of libslub's API in them is weak (a program's namesake
#    takes its place for the program); the rest of libslub-malloc.a,
#    malloc's family, is as in the .so;
#  - a program with namesakes of the API and of internals links with each,
#    and the library never calls them: malloc_namesake linked with
#    libslub-malloc.a, and static_namesake (tests/static_namesake.c) with
#    libslub.a, plain, with the exit report, and with the control socket;
#    and static_namesake_shared, the same program linked with libslub.so.
#
#   malloc_namesake.sh LIBSLUB_MALLOC_SO MALLOC_NAMESAKE DYNLIST LIBSLUB_SO \
#                      LIBSLUB_MALLOC_A MALLOC_NAMESAKE_STATIC LIBSLUB_A STATIC_NAMESAKE \
#                      STATIC_NAMESAKE_SHARED
set -u
lib=$1
prog=$2
dynlist=$3
libslub=$4
malloc_a=$5
mprog_static=$6
slub_a=$7
prog_static=$8
prog_shared=$9
. "$(dirname "$0")/checks.sh"

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

# ARCHIVE SO NAME: the archive's global definitions against the .so's,
# less dlopen, which only the shared drop-in interposes
# (src/malloc_deepbind.c: a fully static program keeps glibc's).
compare() {
	nm --defined-only "$1" | awk 'NF == 3 && $2 ~ /^[A-Z]$/ { print $3 }' |
		sort >"$tmp/a"
	nm -D --defined-only "$2" | awk 'NF == 3 && $2 ~ /^[A-Z]$/ && $3 != "dlopen" { print $3 }' |
		sort >"$tmp/so"
	if cmp -s "$tmp/a" "$tmp/so"; then
		pass "$3: defines globally the $(wc -l <"$tmp/a") symbols the .so exports"
	else
		fail "$3: global definitions differ from the .so's exports:" \
			"$(diff "$tmp/so" "$tmp/a" | grep '^[<>]' | head -20 | tr '\n' ' ')"
	fi
	strong=$(nm --defined-only "$1" |
		awk 'NF == 3 && $2 ~ /^[A-Z]$/ && $2 != "W" { print $3 }' |
		grep -vxf "$tmp/preemptible")
	if [ -z "$strong" ]; then
		pass "$3: every function of the API is weak"
	else
		fail "$3: not weak: $(echo $strong)"
	fi
}
compare "$malloc_a" "$lib" libslub-malloc.a
compare "$slub_a" "$libslub" libslub.a

# DESCRIPTION COMMAND...: the program must say it is ok (malloc_namesake,
# or static_namesake for the one linked with libslub.a).
run_case() {
	desc=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 0 ] && grep -q "_namesake: ok" "$tmp/out"; then
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
	run_case "libslub-malloc.a: namesakes never called${env:+ ($env)}" \
		env $env "$mprog_static"
	run_case "libslub.a: namesakes never called${env:+ ($env)}" \
		env $env "$prog_static"
	run_case "libslub.so linked: namesakes never called${env:+ ($env)}" \
		env $env "$prog_shared"
done
run_case "namesakes never called by libslub.so" "$prog" --dlopen "$libslub"

verdict
