#!/bin/sh
# Install what `make test` / `make bench` need from Debian's archive.
# As root it installs with apt-get; otherwise it names what is missing.
# Usage: scripts/deps.sh test|bench
set -eu
what=${1:-test}

need_cmds="cmake gcc make"
need_pkgs="cmake gcc make libc6-dev"
# The sanitizer runtimes of gcc 12 (normally pulled in by gcc itself).
for lib in libasan.so.8 libtsan.so.2 libubsan.so.1; do
	if ! gcc -print-file-name="$lib" | grep -q /; then
		case $lib in
		libasan*) need_pkgs="$need_pkgs libasan8" ;;
		libtsan*) need_pkgs="$need_pkgs libtsan2" ;;
		libubsan*) need_pkgs="$need_pkgs libubsan1" ;;
		esac
		missing_lib=1
	fi
done 2>/dev/null || true

missing=""
for c in $need_cmds; do
	command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
done

# bench_slab compares against mimalloc when it is installed. It is optional
# (the benchmark says so and leaves the column out), and `test` never
# needs it: so it is installed for `bench` only, and its absence is not an
# error.
if [ "$what" = bench ] &&
   ! printf '#include <mimalloc.h>\n' | gcc -E -x c - >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "deps (bench): installing libmimalloc-dev"
		{ apt-get update -qq &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			libmimalloc-dev >/dev/null; } ||
			echo "deps (bench): libmimalloc-dev not installed;" \
			     "bench_slab runs without mimalloc" >&2
	else
		echo "deps (bench): no mimalloc; bench_slab runs without it" \
		     "(as root: apt-get install libmimalloc-dev)" >&2
	fi
fi

if [ -z "$missing" ] && [ -z "${missing_lib:-}" ]; then
	exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "deps ($what): installing $need_pkgs"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need_pkgs >/dev/null
else
	echo "deps ($what): missing:$missing ${missing_lib:+sanitizer runtimes}" >&2
	echo "install as root: apt-get install $need_pkgs" >&2
	exit 1
fi
