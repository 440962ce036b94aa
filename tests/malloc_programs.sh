#!/bin/sh
# Real programs on libslub-malloc.so through LD_PRELOAD (python3, perl,
# sqlite3, php, git, cmake for C++, a threaded C program, and xz and sort on
# their own threads). Each one runs twice, under the preload and without
# it, and the two outputs must be the same (and right on their own: known
# counts, git's fsck, sqlite's integrity check). Every preloaded run has
# SLUB_STATS=1, so its report on stderr proves that libslub's malloc was
# the one running; stderr must carry no "BUG" report.
#
#   malloc_programs.sh LIBSLUB_MALLOC_SO MALLOC_THREADS SLABINFO
#
# python3 and perl are required (a missing one is a failure); sqlite3,
# php, git and xz are skipped with a message when missing (scripts/deps.sh
# test installs all six as root). With SLUB_DEBUG in the environment every
# preloaded run checks its heap as it goes: a BUG report fails the run.
set -u
lib=$1
threads=$2
slabinfo=$3
tmp=$(mktemp -d)
# MALLOC_PROGRAMS_KEEP=1 keeps the files for a look afterwards.
[ -n "${MALLOC_PROGRAMS_KEEP:-}" ] && echo "files in $tmp" ||
	trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
skipped=0

case $lib in /*) ;; *) lib=$(pwd)/$lib ;; esac
if [ ! -f "$lib" ]; then
	echo "malloc_programs: no $lib"
	echo "0 passed, 1 failed"
	exit 1
fi

pass() {
	passed=$((passed + 1))
	echo "ok: $1"
}

# fail WHAT [FILE...]: the last lines of each file say why.
fail() {
	failed=$((failed + 1))
	echo "FAILED: $1"
	shift
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "  --- $(basename "$f"):"
		tail -n 15 "$f" | sed 's/^/  | /'
	done
}

skip() {
	skipped=$((skipped + 1))
	echo "skipped: $1"
}

# The first of the names that is an executable.
find_prog() {
	for p in "$@"; do
		case $p in
		/*) [ -x "$p" ] && { echo "$p"; return 0; } ;;
		*) command -v "$p" 2>/dev/null && return 0 ;;
		esac
	done
	return 1
}

# pre NAME CMD...: CMD under the preload with SLUB_STATS=1; stdout and
# stderr in $tmp/NAME.pre.out and .err, the exit status in $tmp/NAME.pre.rc.
pre() {
	p_n=$1
	shift
	LD_PRELOAD=$lib SLUB_STATS=1 timeout 100 "$@" \
		>"$tmp/$p_n.pre.out" 2>"$tmp/$p_n.pre.err"
	echo $? >"$tmp/$p_n.pre.rc"
}

# ctl NAME CMD...: the same without the preload (the control).
ctl() {
	p_n=$1
	shift
	env -u LD_PRELOAD timeout 100 "$@" >"$tmp/$p_n.ctl.out" 2>"$tmp/$p_n.ctl.err"
	echo $? >"$tmp/$p_n.ctl.rc"
}

# judge NAME WHAT COMM: both runs exited 0 with the same output; the
# preloaded one printed libslub's report for COMM and no BUG. Says why and
# counts a failure if not; the caller counts the pass (see expect).
judge() {
	j_what=$2
	j_comm=$3
	o_=$tmp/$1
	if [ "$(cat "$o_.ctl.rc")" != 0 ]; then
		fail "$j_what: exit status $(cat "$o_.ctl.rc") without the preload" \
			"$o_.ctl.out" "$o_.ctl.err"
	elif [ "$(cat "$o_.pre.rc")" != 0 ]; then
		fail "$j_what: exit status $(cat "$o_.pre.rc") under the preload" \
			"$o_.pre.out" "$o_.pre.err"
	elif ! cmp -s "$o_.pre.out" "$o_.ctl.out"; then
		diff "$o_.ctl.out" "$o_.pre.out" >"$o_.diff"
		fail "$j_what: output differs from the run without the preload" \
			"$o_.diff"
	elif ! grep -q "^libslub: SLUB_STATS report for $j_comm\$" "$o_.pre.err"; then
		fail "$j_what: no SLUB_STATS report for $j_comm (was it preloaded?)" \
			"$o_.pre.err"
	elif grep -q "BUG" "$o_.pre.err"; then
		fail "$j_what: libslub reported a BUG" "$o_.pre.err"
	else
		return 0
	fi
	return 1
}

# expect WHAT FILE CMD...: after judge, pass if CMD succeeds, else fail.
expect() {
	e_what=$1
	e_file=$2
	shift 2
	if "$@"; then
		pass "$e_what"
	else
		fail "$e_what: the output is wrong" "$e_file"
	fi
}

# ---- python3: json round trip, sorting, threads -----------------------------

cat >"$tmp/work.py" <<'PY'
import hashlib, json, random, sys, threading

random.seed(12345)
data = [{"id": i, "name": "item%06d" % i,
         "tags": ["abcdefgh"[random.randrange(8)] * random.randint(1, 40)
                  for _ in range(random.randint(0, 6))],
         "value": random.random() * 1e6,
         "nested": {"k%d" % j: list(range(j * 3)) for j in range(i % 7)}}
        for i in range(40000)]
s = json.dumps(data, sort_keys=True)
back = json.loads(s)
assert back == data, "json round trip"
back.sort(key=lambda d: (d["value"], d["id"]))
print(len(s), hashlib.sha256(s.encode()).hexdigest())
print(hashlib.sha256(json.dumps(back).encode()).hexdigest())
words = sorted("%x" % (i * 2654435761 % 1000003) for i in range(200000))
print(words[0], words[-1], len(set(words)))

# Blocks made in one thread and freed in another.
out = [None] * 8
def worker(k):
    out[k] = ["%d-%s" % (i, "x" * (i % 300)) for i in range(k, 30000, 8)]
ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(sum(len(x) for lst in out for x in lst))
del out
big = [bytes(range(256)) * (i % 64 + 1) for i in range(20000)]
print(sum(map(len, big)), hashlib.sha256(b"".join(big[::97])).hexdigest())
PY

python=$(find_prog /usr/bin/python3 python3) || python=
if [ -z "$python" ]; then
	fail "python3: not installed (scripts/deps.sh test installs it)"
else
	pre py "$python" "$tmp/work.py"
	ctl py "$python" "$tmp/work.py"
	w="python3: json round trip, sort, threads"
	judge py "$w" python3 &&
		expect "$w" "$tmp/py.pre.out" \
			grep -q '^[0-9]* [0-9a-f]\{64\}$' "$tmp/py.pre.out"
	# The library is mapped into the interpreter.
	LD_PRELOAD=$lib "$python" -c \
		"print('libslub-malloc' in open('/proc/self/maps').read())" \
		>"$tmp/maps.out" 2>&1
	if [ "$(cat "$tmp/maps.out")" = True ]; then
		pass "python3: libslub-malloc in /proc/self/maps"
	else
		fail "python3: libslub-malloc not in /proc/self/maps" "$tmp/maps.out"
	fi
fi

# ---- perl: a hash of 100k entries ----------------------------------------------

cat >"$tmp/work.pl" <<'PL'
use strict;
use warnings;
my %h;
for my $i (1 .. 100000) {
	$h{"key$i"} = join(",", map { $_ * $i } 1 .. 5) . ("z" x ($i % 97));
}
delete $h{"key$_"} for grep { $_ % 3 == 0 } 1 .. 100000;
$h{"re$_"} = scalar reverse($h{"key$_"}) for grep { $_ % 3 } 1 .. 20000;
my @k = sort keys %h;
my $sum = 0;
$sum += length($h{$_}) for @k;
my $all = join(";", map { "$_=$h{$_}" } @k);
my @parts = split /;/, $all;
my @m = grep { /^key\d+5=/ } @parts;
printf "%d %d %s %s %d %d\n", scalar(@k), $sum, $k[0], $k[-1],
	scalar(@parts), scalar(@m);
print unpack("%32C*", $all), "\n";
PL

perl=$(find_prog perl) || perl=
if [ -z "$perl" ]; then
	fail "perl: not installed (scripts/deps.sh test installs it)"
else
	pre pl "$perl" "$tmp/work.pl"
	ctl pl "$perl" "$tmp/work.pl"
	# 66667 keys survive the deletes, plus 13334 reversed ones.
	judge pl "perl: hash of 100k entries" perl &&
		expect "perl: hash of 100k entries" "$tmp/pl.pre.out" \
			grep -q '^80001 ' "$tmp/pl.pre.out"
fi

# ---- sqlite3: a few thousand statements --------------------------------------------

awk 'BEGIN {
	print "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER,";
	print "  val REAL, pad BLOB);";
	print "BEGIN;";
	for (i = 1; i <= 5000; i++)
		printf "INSERT INTO t VALUES(%d, %c%s-%d%c, %d, %d.%d, zeroblob(%d));\n",
			i, 39, substr("abcdefghijklmnopqrstuvwxyz", i % 26 + 1, 1 + i % 17),
			i, 39, i % 13, (i * 7919) % 100000, i % 10, (i * 31) % 2000;
	print "COMMIT;";
	print "CREATE INDEX t_grp ON t(grp, val);";
	print "UPDATE t SET val = val * 2 WHERE grp = 3;";
	print "DELETE FROM t WHERE id % 7 = 0;";
	print "SELECT count(*), sum(grp), printf(\047%.1f\047, sum(val)), sum(length(pad)) FROM t;";
	print "SELECT grp, count(*), max(length(name)), printf(\047%.1f\047, avg(val)) FROM t GROUP BY grp ORDER BY grp;";
	print "SELECT id, name FROM t ORDER BY val DESC, id LIMIT 5;";
	print "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)";
	print "  SELECT count(*), sum(x), group_concat(x, \047\047) IS NOT NULL FROM c;";
	print "SELECT count(*) FROM t a JOIN t b ON a.grp = b.grp AND a.id < b.id WHERE a.id < 400;";
	print "PRAGMA integrity_check;";
}' >"$tmp/work.sql"

sql_ok() {
	grep -q '^4286|' "$1" && [ "$(tail -n 1 "$1")" = ok ]
}

sqlite=$(find_prog sqlite3) || sqlite=
if [ -z "$sqlite" ]; then
	skip "sqlite3: not installed (scripts/deps.sh test installs it as root)"
else
	pre sql "$sqlite" -bail "$tmp/pre.db" ".read $tmp/work.sql"
	ctl sql "$sqlite" -bail "$tmp/ctl.db" ".read $tmp/work.sql"
	# 5000 rows less the 714 multiples of 7; the check says ok.
	w="sqlite3: $(grep -c ';' "$tmp/work.sql") statements"
	judge sql "$w" sqlite3 &&
		expect "$w" "$tmp/sql.pre.out" sql_ok "$tmp/sql.pre.out"
fi

# ---- php: FFI, DOM and json, its extensions opened with RTLD_DEEPBIND -------------

# PHP opens each extension with RTLD_DEEPBIND, so that libffi and libxml2
# bind libc's malloc in their own scope; without the drop-in's fix-up
# (src/malloc_deepbind.c) the FFI call crashed, as under every other
# preloaded allocator tried.
cat >"$tmp/work.php" <<'PHP'
<?php
$ffi = FFI::cdef("size_t strlen(const char *s); int abs(int j);");
$buf = FFI::new("char[4096]");
$n = 0;
for ($i = 0; $i < 2000; $i++) {
	FFI::memcpy($buf, str_repeat("x", $i % 4000) . "\0", $i % 4000 + 1);
	$n += $ffi->strlen($buf) + $ffi->abs(-$i);
}
echo "ffi $n\n";
$doc = new DOMDocument();
$root = $doc->appendChild($doc->createElement("r"));
for ($i = 0; $i < 5000; $i++)
	$root->appendChild($doc->createElement("e", "item $i"))->setAttribute("k", $i % 7);
$xml = $doc->saveXML();
$back = new DOMDocument();
$back->loadXML($xml);
echo "dom ", strlen($xml), " ", $back->getElementsByTagName("e")->length, "\n";
$a = [];
for ($i = 0; $i < 100000; $i++)
	$a["k$i"] = [$i, str_repeat(chr(97 + $i % 26), $i % 200)];
echo "json ", md5(json_encode($a)), " ", count(json_decode(json_encode($a), true)), "\n";
PHP

php_ok() {
	grep -q "^ffi 3998000$" "$1" && grep -q '^dom [0-9]* 5000$' "$1" &&
		grep -q '^json [0-9a-f]* 100000$' "$1"
}

php=$(find_prog php) || php=
if [ -z "$php" ] || ! "$php" -r 'exit(class_exists("FFI") && class_exists("DOMDocument") ? 0 : 1);' 2>/dev/null; then
	skip "php: not installed with FFI and DOM (scripts/deps.sh test installs php-cli and php-xml as root)"
else
	pre php "$php" -d ffi.enable=1 "$tmp/work.php"
	ctl php "$php" -d ffi.enable=1 "$tmp/work.php"
	w="php: FFI, DOM and json in extensions opened with RTLD_DEEPBIND"
	judge php "$w" "$(basename "$php")" &&
		expect "$w" "$tmp/php.pre.out" php_ok "$tmp/php.pre.out"
fi

# ---- git: init, add, commit, gc and fsck on a generated tree ---------------------

# make_tree DIR: 200 files in 10 directories, the same every time.
make_tree() {
	awk -v dir="$1" 'BEGIN {
		for (d = 0; d < 10; d++) {
			system("mkdir -p " dir "/d" d);
			for (f = 0; f < 20; f++) {
				n = d * 20 + f;
				file = dir "/d" d "/f" f ".txt";
				for (l = 0; l < (n * 37) % 400 + 1; l++)
					printf "%d/%d line %d: %s\n", d, f, l,
						substr("the quick brown fox jumps over the lazy dog", 1 + l % 20) > file;
				close(file);
			}
		}
	}'
}

# git_work DIR: two commits, a gc, then what to compare. Runs as one
# shell so that every git it starts inherits the preload (or not).
cat >"$tmp/git_work.sh" <<'SH'
set -e
cd "$1"
git init -q -b main .
git add .
git commit -q -m "a tree of 200 files"
for n in 3 17 42 99 150; do rm "d$((n / 20))/f$((n % 20)).txt"; done
for n in 1 2 3 4 5; do echo "new file $n" > "d$n/new$n.txt"; done
for d in 0 1 2 3; do for f in 5 6 7 8 9; do echo "changed" >> "d$d/f$f.txt"; done; done
git add -A
git commit -q -m "change 20, remove 5, add 5"
git gc -q
git fsck --full --strict
echo "fsck: ok"
echo "status: [$(git status --porcelain)]"
git rev-parse HEAD HEAD~1
git log --stat
git count-objects -v | grep -v size
SH

# 200 files in the first commit, a clean tree, everything packed, and
# nothing wrong that fsck would say.
git_ok() {
	grep -q '^fsck: ok$' "$1" && grep -q '200 files changed' "$1" &&
		grep -q '^status: \[\]$' "$1" &&
		grep -q '^count: 0$' "$1" &&
		! grep -qi 'error\|missing\|broken\|dangling' "$1"
}

git=$(find_prog git) || git=
if [ -z "$git" ]; then
	skip "git: not installed (scripts/deps.sh test installs it as root)"
else
	mkdir -p "$tmp/gpre" "$tmp/gctl" "$tmp/home"
	make_tree "$tmp/gpre"
	make_tree "$tmp/gctl"
	export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null \
		GIT_AUTHOR_NAME=libslub GIT_AUTHOR_EMAIL=libslub@example.org \
		GIT_COMMITTER_NAME=libslub GIT_COMMITTER_EMAIL=libslub@example.org \
		GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" \
		GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
	pre git sh "$tmp/git_work.sh" "$tmp/gpre"
	ctl git sh "$tmp/git_work.sh" "$tmp/gctl"
	o=$tmp/git.pre.out
	w="git: 2 commits of 200 files, gc, fsck"
	judge git "$w" git && expect "$w" "$o" git_ok "$o"
fi

# ---- cmake -P: a C++ program, new and delete bound to the drop-in ---------------

cat >"$tmp/work.cmake" <<'CM'
set(acc "")
set(json "{}")
foreach(i RANGE 1 1500)
  math(EXPR sq "${i} * ${i} % 1009")
  string(REPEAT "ab" ${sq} pad)
  list(APPEND acc "k${i}=${pad}")
  if(i LESS_EQUAL 300)
    string(JSON json SET "${json}" "k${i}" "${sq}")
  endif()
endforeach()
list(SORT acc)
list(LENGTH acc n)
list(FILTER acc INCLUDE REGEX "^k[0-9]*7=")
list(LENGTH acc n7)
string(JOIN ";" all ${acc})
string(LENGTH "${all}" len)
string(REGEX REPLACE "(ab)+" "<\\0>" short "${all}")
string(LENGTH "${short}" len2)
string(JSON v GET "${json}" "k299")
string(JSON nk LENGTH "${json}")
string(SHA256 h "${all}${json}")
message(STATUS "${n} ${n7} ${len} ${len2} ${v} ${nk} ${h}")
CM

# The dynamic linker's own account (LD_DEBUG=bindings) of where cmake's
# operator new and sized delete went: libslub-malloc's, not libstdc++'s.
cxx_bound() {
	for s in _Znwm _ZdlPvm; do
		cat "$tmp"/cm.ld.* | grep "binding file [^ ]*cmake .*libslub-malloc.*symbol \`$s'" \
			>/dev/null || return 1
	done
}

cmake=$(find_prog cmake) || cmake=
if [ -z "$cmake" ]; then
	skip "cmake: not installed"
else
	pre cm env LD_DEBUG=bindings LD_DEBUG_OUTPUT="$tmp/cm.ld" \
		"$cmake" -P "$tmp/work.cmake"
	ctl cm "$cmake" -P "$tmp/work.cmake"
	# 1500 keys, 150 ending in 7, k299 = 299^2 mod 1009 = 609.
	judge cm "cmake -P: lists, regex, JSON" cmake &&
		expect "cmake -P: lists, regex, JSON" "$tmp/cm.pre.out" \
			grep -q '^-- 1500 150 143960 144260 609 300 ' "$tmp/cm.pre.out" &&
		expect "cmake -P: operator new and delete are libslub's" \
			"$tmp/cm.pre.err" cxx_bound
fi

# ---- A threaded C program, cross-thread frees --------------------------------------

# The report: slabinfo's table, and a record that slabinfo -f reads back
# with kmalloc-64's allocations counted (the activity view's Alloc).
stats_ok() {
	grep -q '^Name  *Objects  *Objsize  *Space' "$1" &&
		"$slabinfo" -f "$1" -D '^kmalloc-64$' |
		awk '$1 == "kmalloc-64" && $3 > 0 { ok = 1 } END { exit !ok }'
}

if [ ! -x "$threads" ]; then
	fail "malloc_threads: no $threads"
else
	pre thr "$threads" --expect-slub
	ctl thr "$threads"
	judge thr "malloc_threads: 16 threads" malloc_threads &&
		expect "malloc_threads: 16 threads, SLUB_STATS report" \
			"$tmp/thr.pre.err" stats_ok "$tmp/thr.pre.err"
	# Fallback mode, and no report without SLUB_STATS.
	LD_PRELOAD=$lib SLUB_RSEQ=0 timeout 100 "$threads" --expect-slub \
		>"$tmp/thr0.out" 2>"$tmp/thr0.err"
	rc=$?
	if [ $rc != 0 ] || ! cmp -s "$tmp/thr0.out" "$tmp/thr.ctl.out"; then
		fail "malloc_threads: SLUB_RSEQ=0: exit status $rc" \
			"$tmp/thr0.out" "$tmp/thr0.err"
	elif grep -q 'SLUB_STATS\|BUG' "$tmp/thr0.err"; then
		fail "malloc_threads: SLUB_RSEQ=0: unexpected report" "$tmp/thr0.err"
	else
		pass "malloc_threads: fallback mode, no report unasked"
	fi
fi

# ---- coreutils sort: stderr closed by an atexit handler -------------------------

# sort's close_stdout() closes fd 2 at exit, before libslub's destructor
# writes the report: it goes to the copy of stderr taken at bring-up (it
# was lost). 20,000 lines, sorted in the C locale.
awk 'BEGIN { for (i = 0; i < 20000; i++) print (i * 7919) % 20011 }' \
	>"$tmp/lines.txt"
pre sort env LC_ALL=C sort -n "$tmp/lines.txt"
ctl sort env LC_ALL=C sort -n "$tmp/lines.txt"
judge sort "sort: 20,000 lines" sort &&
	expect "sort: 20,000 lines, the report after stderr's close" \
		"$tmp/sort.pre.out" test "$(wc -l <"$tmp/sort.pre.out")" = 20000

# ---- xz and sort: Debian's own threaded programs ----------------------------------

# 16 MB of text. xz in 1 MiB blocks on four threads: the main thread
# hands each block's buffers to a worker and frees them when it is done,
# most of them large blocks from the page allocator. The output is the
# same whatever the timing (the blocks are cut by size), and it must
# decompress to the input. Then the same file decompressed on four
# threads, and sorted with sort's own threads.
awk 'BEGIN { for (i = 0; i < 400000; i++)
	printf "%d %x line %d\n", (i * 7919) % 100003, (i * 2654435761) % 4294967291, i }' \
	>"$tmp/big.txt"
xz_ok() {
	xz -d -c "$tmp/xzc.pre.out" | cmp -s - "$tmp/big.txt"
}
if ! find_prog xz >/dev/null; then
	skip "xz: not installed (scripts/deps.sh test installs xz-utils as root)"
else
	pre xzc xz -T4 -3 --block-size=1MiB -c "$tmp/big.txt"
	ctl xzc xz -T4 -3 --block-size=1MiB -c "$tmp/big.txt"
	judge xzc "xz -T4: 16 MB in 1 MiB blocks" xz &&
		expect "xz -T4: 16 MB in 1 MiB blocks, decompressed back" \
			"$tmp/xzc.pre.err" xz_ok
	pre xzd xz -T4 -d -c "$tmp/xzc.ctl.out"
	ctl xzd xz -T4 -d -c "$tmp/xzc.ctl.out"
	judge xzd "xz -T4 -d: 16 blocks" xz &&
		expect "xz -T4 -d: 16 blocks, the input again" \
			"$tmp/xzd.pre.err" cmp -s "$tmp/xzd.pre.out" "$tmp/big.txt"
fi
pre psort env LC_ALL=C sort --parallel=4 -S 64M -k2,2 "$tmp/big.txt"
ctl psort env LC_ALL=C sort --parallel=4 -S 64M -k2,2 "$tmp/big.txt"
judge psort "sort --parallel=4: 400,000 lines" sort &&
	expect "sort --parallel=4: 400,000 lines, in order" "$tmp/psort.pre.out" \
		env LC_ALL=C sort -c -k2,2 "$tmp/psort.pre.out"

[ $skipped = 0 ] || echo "$skipped skipped"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
