#!/bin/sh
# SPDX-License-Identifier: MIT
#
# static-object.sh CC OBJCOPY READELF OUT ARCHIVE [DYNLIST]
#
# The object that libslub.a and libslub-malloc.a ship: every member of
# ARCHIVE linked into one relocatable object (CC -r), then
#  - each hidden symbol (the library's internals: zone, free_slab,
#    parse_size, seq_printf, ...) made local, so that a program or another
#    static library with a namesake links and keeps its own;
#  - each public symbol (libslub's API: kmalloc, free_pages, slub_trim,
#    ...) bound inside the object to a local copy, and exported as a weak
#    definition at the same address: a program's own kmalloc serves the
#    program, the library's calls reach its own. The shared libraries do
#    the same with -Bsymbolic-functions and src/malloc.dynlist.
#  - the symbols DYNLIST names (malloc's family, C++'s operators, vfork,
#    __register_atfork) are left as they are: the whole program must call
#    the one definition, as under LD_PRELOAD;
#  - each weak hidden reference the object leaves unbound (libslub-malloc's
#    hooks in libslub.a: malloc_fork_prepare, malloc_purge_tick, ...,
#    compiler.h's __weak_hook) renamed NAME.slub_unbound, a name no
#    program can define: under its own name a program's function of that
#    name was called by the library's fork handlers and purge ticks.
set -eu

cc=$1 objcopy=$2 readelf=$3 out=$4 archive=$5 dynlist=${6:-}
tmp=$out.tmp
trap 'rm -f "$tmp".o "$tmp".l.o "$tmp".out.o "$tmp".pub "$tmp".keep' EXIT

"$cc" -r -nostdlib -o "$tmp.o" -Wl,--whole-archive "$archive" -Wl,--no-whole-archive

# The dynamic list's names and patterns (word;), as anchored regexps.
: > "$tmp.keep"
if [ -n "$dynlist" ]; then
	sed -e 's,/\*.*\*/,,' -e '/^ *\*/d' -e '/\/\*/d' "$dynlist" |
	tr ' \t' '\n\n' | sed -n 's/^\([A-Za-z0-9_*][A-Za-z0-9_*]*\);$/\1/p' |
	sed -e 's/\*/.*/g' -e 's/^/^/' -e 's/$/$/' > "$tmp.keep"
fi

# Defined, global or weak, default visibility, not kept: section index,
# value, type, name. readelf -sW: Num: Value Size Type Bind Vis Ndx Name.
"$readelf" -sW "$tmp.o" | awk -v keep="$tmp.keep" '
	BEGIN { while ((getline re < keep) > 0) pat[n++] = re }
	$5 != "GLOBAL" && $5 != "WEAK" { next }
	$6 != "DEFAULT" || $7 == "UND" || $7 == "ABS" || $7 == "COM" { next }
	{
		for (i = 0; i < n; i++)
			if ($8 ~ pat[i])
				next
		print $7, $2, $4, $8
	}' > "$tmp.pub"

# Weak, hidden and undefined: a hook of the other library's.
unbound=$("$readelf" -sW "$tmp.o" | awk '$5 == "WEAK" && $6 == "HIDDEN" && $7 == "UND" {
	printf " --redefine-sym=%s=%s.slub_unbound", $8, $8 }')

# shellcheck disable=SC2086
"$objcopy" --localize-hidden $(awk '{ printf " --localize-symbol=%s", $4 }' "$tmp.pub") \
	$unbound "$tmp.o" "$tmp.l.o"

# Section names by index: readelf -SW prints "[ N] name type ...".
adds=$("$readelf" -SW "$tmp.o" | sed -n 's/^ *\[ *\([0-9]*\)\] \([^ ]*\) .*/\1 \2/p' |
	awk -v pub="$tmp.pub" '
	{ sec[$1] = $2 }
	END {
		while ((getline line < pub) > 0) {
			split(line, f, " ")
			kind = f[3] == "FUNC" ? "function" : "object"
			printf " --add-symbol=%s=%s:0x%s,weak,%s", f[4], sec[f[1]], f[2], kind
		}
	}')
# shellcheck disable=SC2086
"$objcopy" $adds "$tmp.l.o" "$tmp.out.o"
# Only a whole object takes OUT's place: a failed step leaves none to
# look up to date.
mv "$tmp.out.o" "$out"
