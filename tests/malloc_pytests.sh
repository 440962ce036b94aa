#!/bin/sh
# CPython's own regression tests on libslub-malloc.so through LD_PRELOAD:
# some forty modules of Debian's libpython3.X-testsuite that allocate hard
# (dicts, sets, json, pickle, decimal, unicode, xml, zip, email), run
# threads (thread, queue), fork (fork1, os) or watch the heap themselves
# (gc, weakref, tracemalloc, ctypes, mmap). The test runner's workers are
# preloaded too (they inherit the environment).
#
#   malloc_pytests.sh LIBSLUB_MALLOC_SO
#
# A module that fails under the preload is run again without it: if it
# fails there too the machine is to blame (no network, a sandbox's
# signals, a module Debian leaves out) and it is named, not counted;
# if it passes there the drop-in broke it and the test fails. Any "BUG"
# report fails the test. Skipped (exit 77) where the test suite
# is not installed (scripts/deps.sh test installs it as root).
set -u
lib=$1
case $lib in /*) ;; *) lib=$(pwd)/$lib ;; esac
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || { echo "skipped: no python3"; exit 77; }
tmp=$(mktemp -d)
[ -n "${MALLOC_PROGRAMS_KEEP:-}" ] && echo "files in $tmp" ||
	trap 'rm -rf "$tmp"' EXIT

if ! env -u LD_PRELOAD "$py" -c 'import test.test_json, test.libregrtest' \
	>/dev/null 2>&1; then
	echo "skipped: CPython's test suite is not installed" \
	     "(as root: apt-get install libpython3.X-testsuite)"
	exit 77
fi

# About 40 s of work on two CPUs; the slow modules (concurrent_futures,
# subprocess, signal) stay out.
mods="test_dict test_json test_list test_set test_re test_unicode test_bytes
test_collections test_itertools test_functools test_pickle test_decimal
test_zlib test_bz2 test_lzma test_gc test_weakref test_os test_tracemalloc
test_ctypes test_mmap test_fork1 test_thread test_queue test_struct
test_array test_memoryview test_long test_float test_random test_hashlib
test_io test_shutil test_tempfile test_zipfile test_csv test_xml_etree
test_sort test_heapq test_enum test_dataclasses test_typing test_email
test_argparse"

# Is it preloaded? The workers inherit LD_PRELOAD; SLUB_STATS would put
# its report into their replies to the runner, so the maps tell instead.
if ! LD_PRELOAD=$lib "$py" -c 'print(open("/proc/self/maps").read())' |
	grep -q "$(basename "$lib")"; then
	echo "FAILED: $lib is not in python3's maps under LD_PRELOAD"
	exit 1
fi
LD_PRELOAD=$lib timeout 900 "$py" -m test -j2 --timeout 300 $mods \
	>"$tmp/pre.out" 2>&1
rc=$?
failed=0
if grep -qE "^BUG[ :]" "$tmp/pre.out"; then
	echo "FAILED: libslub reported a BUG"
	grep -E -A 12 "^BUG[ :]" "$tmp/pre.out" | head -n 40 | sed 's/^/  | /'
	failed=1
fi

# Each module the runner did not report as passed or skipped. One that
# only "altered the execution environment" (a thread or a file left
# behind, which depends on timing) passed its tests and is not counted.
bad=$(grep -E '\] test_[a-z0-9_]+ (failed|crashed|timed out)' "$tmp/pre.out" |
	grep -v 'failed (env changed)' |
	grep -oE '\] test_[a-z0-9_]+' | awk '{ print $2 }' | sort -u)
ok=$(grep -cE '\] test_[a-z0-9_]+ passed' "$tmp/pre.out")
changed=$(grep -cE '\] test_[a-z0-9_]+ failed \(env changed\)' "$tmp/pre.out")
if [ $rc != 0 ] && [ -z "$bad" ] && [ "$changed" = 0 ]; then
	echo "FAILED: the test runner exited $rc and named no failed module"
	tail -n 20 "$tmp/pre.out" | sed 's/^/  | /'
	exit 1
fi
for m in $bad; do
	if env -u LD_PRELOAD timeout 600 "$py" -m test --timeout 300 "$m" \
		>"$tmp/$m.ctl" 2>&1; then
		echo "FAILED: $m fails under the preload and passes without it"
		grep -A 30 "$m" "$tmp/pre.out" | head -n 40 | sed 's/^/  | /'
		failed=1
	else
		echo "not counted: $m fails without the preload too"
	fi
done
echo "$ok modules passed under the preload, $changed changed the environment"
# A run that passed almost nothing proves nothing.
if [ $((ok + changed)) -lt 30 ]; then
	echo "FAILED: only $ok modules passed"
	failed=1
fi
[ $failed = 0 ]
