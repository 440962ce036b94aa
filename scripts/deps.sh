#!/bin/sh
# Install what `make test` / `make bench` / `make fuzz` need from Debian's
# archive. As root it installs with apt-get; otherwise it names what is
# missing. Usage: scripts/deps.sh test|bench|fuzz
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

# bench_malloc and bench_suite preload jemalloc, tcmalloc and mimalloc (the runtime
# libraries, no headers) next to libslub-malloc.so. Each is optional: one
# that cannot be installed is left out of the table, with a note.
if [ "$what" = bench ]; then
	for pkg in libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0; do
		case $pkg in
		libjemalloc2) lib=libjemalloc.so.2 ;;
		libtcmalloc-minimal4) lib=libtcmalloc_minimal.so.4 ;;
		libmimalloc2.0) lib=libmimalloc.so.2 ;;
		esac
		[ -e "/usr/lib/x86_64-linux-gnu/$lib" ] && continue
		[ -n "$(find /usr/lib /lib -name "$lib" 2>/dev/null | head -n 1)" ] &&
			continue
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
			echo "deps (bench): installing $pkg"
			{ [ -n "${apt_updated:-}" ] || apt-get update -qq; } &&
			apt_updated=1 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				"$pkg" >/dev/null ||
				echo "deps (bench): $pkg not installed;" \
				     "the benchmarks leave it out" >&2
		else
			echo "deps (bench): no $lib; the benchmarks leave it out" \
			     "(as root: apt-get install $pkg)" >&2
		fi
	done
fi

# bench_suite draws its plots with matplotlib under Debian's python3. It is
# optional: without it the tables, JSON and CSV are written and the plots
# are left out, with a note.
if [ "$what" = bench ] &&
   ! /usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "deps (bench): installing python3-matplotlib"
		{ [ -n "${apt_updated:-}" ] || apt-get update -qq; } &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			python3-matplotlib >/dev/null ||
			echo "deps (bench): python3-matplotlib not installed;" \
			     "bench_suite leaves the plots out" >&2
	else
		echo "deps (bench): no matplotlib; bench_suite leaves the plots" \
		     "out (as root: apt-get install python3-matplotlib)" >&2
	fi
fi

# tests/malloc_programs.sh runs real programs on libslub-malloc.so: python3
# and perl it requires, sqlite3, git, xz and php it skips when they are
# missing; bench/bench_programs.py (make bench-detail) times the same
# programs, and leaves out those it cannot find.
# Building needs none of them: so they are installed as root and only
# named otherwise.
if [ "$what" = test ] || [ "$what" = bench ]; then
	prog_pkgs=""
	for prog in python3 perl sqlite3 git xz php; do
		pkg=$prog
		[ "$prog" = xz ] && pkg=xz-utils
		[ "$prog" = php ] && pkg="php-cli php-xml"	# FFI is in php-cli, DOM in php-xml
		command -v "$prog" >/dev/null 2>&1 || prog_pkgs="$prog_pkgs $pkg"
	done
	if [ -z "$prog_pkgs" ]; then
		:
	elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "deps ($what): installing$prog_pkgs"
		{ apt-get update -qq &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			$prog_pkgs >/dev/null; } ||
			echo "deps ($what):$prog_pkgs not installed;" \
			     "malloc_programs and bench_programs will say what" \
			     "they could not run" >&2
	else
		echo "deps ($what): missing:$prog_pkgs; the malloc_programs test" \
		     "needs python3 and perl and skips sqlite3, git, xz and php;" \
		     "bench_programs leaves out what is missing" \
		     "(as root: apt-get install$prog_pkgs)" >&2
	fi
fi
if [ "$what" = test ]; then
	# tests/malloc_pytests.sh runs CPython's own regression tests, which
	# Debian ships apart from python3; skipped when they are missing.
	py=/usr/bin/python3
	[ -x "$py" ] || py=python3
	if command -v "$py" >/dev/null 2>&1 &&
	   ! "$py" -c 'import test.test_json' >/dev/null 2>&1; then
		pkg=$("$py" -c 'import sys; print("libpython%d.%d-testsuite" % sys.version_info[:2])')
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
			echo "deps (test): installing $pkg"
			{ apt-get update -qq &&
			  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				"$pkg" >/dev/null; } ||
				echo "deps (test): $pkg not installed;" \
				     "malloc_pytests is skipped" >&2
		else
			echo "deps (test): no $pkg; malloc_pytests is skipped" \
			     "(as root: apt-get install $pkg)" >&2
		fi
	fi
fi

# make test builds the library with clang too (test-clang in the
# Makefile): the restartable sequences are inline asm, and clang prints
# their operands differently. Optional: without clang that build is
# skipped, with a note.
if [ "$what" = test ] && ! command -v clang >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "deps (test): installing clang"
		{ apt-get update -qq &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			clang >/dev/null; } ||
			echo "deps (test): clang not installed;" \
			     "the clang build is skipped" >&2
	else
		echo "deps (test): no clang; the clang build is skipped" \
		     "(as root: apt-get install clang)" >&2
	fi
fi

# make fuzz builds the fuzz target under libFuzzer: clang, and the runtime
# libraries that hold libFuzzer (libclang-rt-dev). Only for `fuzz`: `make
# test` runs the same target through a main() of its own, built with gcc.
if [ "$what" = fuzz ] &&
   ! printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)\n{ return 0; }\n' |
     clang -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "deps (fuzz): installing clang libclang-rt-dev"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang \
			libclang-rt-dev >/dev/null
	else
		echo "deps (fuzz): no clang with libFuzzer" \
		     "(as root: apt-get install clang libclang-rt-dev)" >&2
		exit 1
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
