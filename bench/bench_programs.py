#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Real programs from Debian's packages under each allocator.

bench_malloc measures the malloc API in loops written for it; this runs
unchanged programs, each on a fixed piece of work, under glibc's malloc
and under libslub-malloc.so, jemalloc, tcmalloc and mimalloc through
LD_PRELOAD, and reports the wall time and the peak RSS of each, as
ratios to the best peer (glibc, jemalloc, tcmalloc, mimalloc), in the
manner of mimalloc-bench's program rows. The repetitions are alternated
(each one starts the turn at the next allocator) so that a slow minute of
a shared machine falls on all of them.

Every run's output must match glibc's: a program that computed something
else under an allocator is reported and the script exits 1.

  /usr/bin/python3 bench/bench_programs.py -L build-release/libslub-malloc.so
      [-r REPS] [-s SCALE] [-a glibc,libslub,...] [-w python-json,...]
      [-o results/programs.json] [-X bench_spawn] [-l]

-s scales every workload (1.0: about a second or two each under glibc
on one CPU of the development machine); -l lists the workloads.
"""
import argparse
import hashlib
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS = [
    ("jemalloc", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"),
    ("tcmalloc", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"),
    ("mimalloc", "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"),
]
PEER_NAMES = ["glibc"] + [n for n, _ in PEERS]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


# ---- The workloads ------------------------------------------------------------
#
# Each is a function of (work directory, scale) that prepares its input
# (under no preload, untimed) and returns a dict: argv, and optionally env
# (added to the child's), stdout (a file name in the work directory for the
# child's standard output, else it is captured), and check (a function of
# the captured output returning what must be the same under every
# allocator; by default the output itself).

PY_JSON = r"""
import json, random, sys
n, rounds = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(1)
d = [{"id": i, "name": "n%d" % i, "tags": [str(j) for j in range(i % 13)],
      "v": rng.random(), "sub": {"a": i * 3, "b": [i] * (i % 5)}} for i in range(n)]
for r in range(rounds):
    s = json.dumps(d)
    d = json.loads(s)
    d.sort(key=lambda x: (x["v"], x["id"]))
    d = [x for x in d if x["id"] % 7 != r] + [dict(x, id=x["id"] + n) for x in d[:n // 7]]
print(len(s), len(d), sum(x["id"] for x in d))
"""


def python_json(work, scale, pymalloc=True):
    """CPython: JSON text of 40,000 small records written and parsed
    twice, sorted, filtered; pymalloc serves its objects of up to 512
    bytes, so malloc sees the strings, lists and dicts beyond that."""
    script = os.path.join(work, "json_churn.py")
    with open(script, "w") as f:
        f.write(PY_JSON)
    n = max(int(40000 * scale), 100)
    env = {} if pymalloc else {"PYTHONMALLOC": "malloc"}
    if not pymalloc:
        n = max(int(25000 * scale), 100)
    return {"argv": ["/usr/bin/python3", script, str(n), "2"], "env": env}


def python_malloc(work, scale):
    """The same with PYTHONMALLOC=malloc: every object from malloc."""
    return python_json(work, scale, pymalloc=False)


PERL = r"""
my ($n) = @ARGV; my %h; my $t = 0;
for my $i (1 .. $n) { $h{"key$i"} = join(",", map { $_ * $i } 1 .. ($i % 9)); }
for my $r (1 .. 2) {
    for my $k (keys %h) { (my $v = $h{$k}) =~ s/(\d+)/<$1>/g; $h{$k} = $v if $r == 1; }
    delete $h{"key$_"} for grep { $_ % 5 == $r } 1 .. $n;
}
$t += length($h{$_}) for sort keys %h;
print scalar(keys %h), " $t\n";
"""


def perl_hash(work, scale):
    """perl: a hash of 120,000 strings built, rewritten by a regex,
    thinned out, sorted."""
    return {"argv": ["perl", "-e", PERL, str(max(int(120000 * scale), 100))]}


def sqlite(work, scale):
    """sqlite3: 150,000 inserts in one transaction into a table with a
    secondary index, then grouping and ordering queries."""
    n = max(int(150000 * scale), 100)
    path = os.path.join(work, "load.sql")
    with open(path, "w") as f:
        f.write("create table t(a integer primary key, b text, c real, d text);\n"
                "create index tb on t(b);\nbegin;\n")
        for i in range(n):
            f.write("insert into t(b, c, d) values('k%d', %d.5, '%s');\n"
                    % ((i * 7919) % n, i, "x" * (i % 40)))
        f.write("commit;\n"
                "select count(*), sum(length(d)) from t where b > 'k5';\n"
                "select substr(b, 1, 3), count(*), max(c) from t group by 1 order by 2 desc limit 5;\n"
                "select b from t order by d, b limit 3 offset 1000;\n")
    return {"argv": ["sqlite3", ":memory:", ".read " + path]}


def gcc(work, scale):
    """gcc: libslub's own src/slub.c compiled with -O2 (-O0 when scaled
    down); the object file's hash is the output."""
    obj = os.path.join(work, "slub.o")
    opt = "-O2" if scale >= 0.5 else "-O0"
    return {"argv": ["gcc", opt, "-c", os.path.join(ROOT, "src", "slub.c"),
                     "-I" + os.path.join(ROOT, "src"), "-I" + os.path.join(ROOT, "include"),
                     "-o", obj],
            "check": lambda out: digest(obj)}


def git_repack(work, scale):
    """git: a generated history of 600 files over 6 commits repacked from
    scratch (repack -adf) on 2 threads, which search deltas in parallel."""
    repo = os.path.join(work, "repo")
    files = max(int(600 * scale), 10)
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "slab", "page", "sheaf", "barn",
             "cpu", "node", "order", "free", "list", "lock"]
    env = dict(os.environ, GIT_AUTHOR_DATE="2026-01-01T00:00:00Z",
               GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
    env.pop("LD_PRELOAD", None)
    git = ["git", "-C", repo, "-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run(["git", "init", "-q", repo], check=True, env=env)
    text = {i: [" ".join(rng.choice(words) for _ in range(10)) for _ in range(150)]
            for i in range(files)}
    for c in range(6):
        for i in range(files):
            if c and rng.random() < 0.5:
                continue
            lines = text[i]
            for _ in range(5):
                lines[rng.randrange(len(lines))] = " ".join(rng.choice(words) for _ in range(10))
            with open(os.path.join(repo, "f%03d.txt" % i), "w") as f:
                f.write("\n".join(lines) + "\n")
        subprocess.run(git + ["add", "-A"], check=True, env=env)
        subprocess.run(git + ["commit", "-q", "-m", "c%d" % c], check=True, env=env)
    # Packed once before the timed runs: the first repack of loose objects
    # takes less memory than one of a pack, and would fall on one allocator.
    subprocess.run(git + ["repack", "-a", "-d", "-q"], check=True, env=env)

    def check(out):
        res = subprocess.run(["git", "-C", repo, "count-objects", "-v"], env=env,
                             check=True, capture_output=True, text=True).stdout
        return [l for l in res.splitlines() if l.startswith(("count:", "in-pack:"))]
    return {"argv": ["git", "-C", repo, "-c", "pack.threads=2", "repack", "-a", "-d",
                     "-f", "-q"], "check": check}


def text_file(work, name, lines, seed):
    path = os.path.join(work, name)
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(lines):
            f.write("%d %s %d\n" % (rng.randrange(10 ** 9), "abcdefgh"[i % 8] * (i % 23),
                                    i))
    return path


def xz(work, scale):
    """xz: 7 MB of text compressed in 4 MiB blocks on 2 threads (the main
    thread passes each block's buffers to a worker)."""
    src = text_file(work, "xz.in", max(int(250000 * scale), 1000), 3)
    return {"argv": ["xz", "-T2", "--block-size=4MiB", "-6", "-c", src], "stdout": "xz.out",
            "check": lambda out: digest(os.path.join(work, "xz.out"))}


def sort(work, scale):
    """coreutils sort: 2 million lines sorted by number on 2 threads."""
    src = text_file(work, "sort.in", max(int(2000000 * scale), 1000), 5)
    dst = os.path.join(work, "sort.out")
    return {"argv": ["sort", "--parallel=2", "-S", "64M", "-n", src, "-o", dst],
            "env": {"LC_ALL": "C"}, "check": lambda out: digest(dst)}


WORKLOADS = [
    ("python-json", "/usr/bin/python3", python_json),
    ("python-malloc", "/usr/bin/python3", python_malloc),
    ("perl-hash", "perl", perl_hash),
    ("sqlite3", "sqlite3", sqlite),
    ("gcc", "gcc", gcc),
    ("git-repack", "git", git_repack),
    ("xz-threads", "xz", xz),
    ("sort-threads", "sort", sort),
]


# ---- Running ------------------------------------------------------------------

def run_once(spec, work, preload, spawn):
    """One child: (wall seconds, CPU seconds, peak RSS KB, output to check),
    as bench_spawn measured them: the peak is wait4's ru_maxrss, which
    covers the children it waited for (git repack's pack-objects)."""
    env = dict(os.environ, **spec.get("env", {}))
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
    out_path = os.path.join(work, spec.get("stdout", "stdout.txt"))
    err_path = os.path.join(work, "stderr.txt")
    res_path = os.path.join(work, "spawn.txt")
    with open(out_path, "wb") as out_file, open(err_path, "wb") as err_file:
        rc = subprocess.call([spawn, res_path] + spec["argv"], env=env,
                             stdout=out_file, stderr=err_file, cwd=work)
    with open(out_path, "rb") as f:
        out = f.read() if "stdout" not in spec else b""
    with open(err_path, "rb") as f:
        err = f.read()
    if rc:
        raise RuntimeError("bench_spawn failed (%d): %s" % (rc, err[-600:].decode(errors="replace")))
    with open(res_path) as f:
        status, wall, cpu, kb = f.read().split()
    if int(status):
        raise RuntimeError("exit status %s; stderr: %s" % (status, err[-600:].decode(errors="replace")))
    if b"BUG " in err:
        raise RuntimeError("a BUG report on stderr: %s" % err[:600].decode(errors="replace"))
    check = spec.get("check", lambda o: o)
    return float(wall), float(cpu), int(kb), check(out)


def find_spawn(args):
    """bench_spawn: -X, else beside the build's libslub-malloc.so or in
    build-release/bench."""
    places = [args.spawn] if args.spawn else []
    if args.libslub:
        places.append(os.path.join(os.path.dirname(os.path.abspath(args.libslub)),
                                   "bench", "bench_spawn"))
    places.append(os.path.join(ROOT, "build-release", "bench", "bench_spawn"))
    for p in places:
        if os.access(p, os.X_OK):
            return os.path.abspath(p)
    sys.exit("bench_programs: no bench_spawn (built in bench/; -X names it)")


def allocators(args):
    found = [("glibc", None)]
    if args.libslub:
        found.append(("libslub", os.path.abspath(args.libslub)))
    found += [(n, p) for n, p in PEERS if os.path.exists(p)]
    if args.allocators:
        want = args.allocators.split(",")
        unknown = set(want) - {n for n, _ in found} - {"libslub"} - set(PEER_NAMES)
        if unknown:
            sys.exit("bench_programs: unknown allocator %s" % ",".join(sorted(unknown)))
        found = [(n, p) for n, p in found if n in want]
    if not any(n == "glibc" for n, _ in found):
        sys.exit("bench_programs: glibc is the reference for every output; keep it in -a")
    return found


def best_peer(medians, names, key, lowest):
    peers = [n for n in names if n in PEER_NAMES]
    pick = min if lowest else max
    return pick(peers, key=lambda n: key(medians[n])) if peers else None


def table(title, rows, names, fmt, ratio, lowest):
    """rows: [(workload, {allocator: value})]; ratio(value, best) per cell."""
    print(title)
    print("%-14s" % "" + "".join("%16s" % n for n in names) + "  best peer")
    logs = {n: [] for n in names}
    for wl, med in rows:
        best = best_peer(med, names, lambda v: v, lowest)
        cells = []
        for n in names:
            r = ratio(med[n], med[best]) if best else float("nan")
            if best:
                logs[n].append(math.log(r))
            cells.append("%16s" % (fmt % med[n] + " (%.2f)" % r))
        print("%-14s" % wl + "".join(cells) + "  " + (best or "-"))
    if rows and all(logs[n] for n in names):
        print("%-14s" % "geomean" + "".join(
            "%16s" % "(%.2f)" % math.exp(sum(logs[n]) / len(logs[n])) for n in names))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-L", dest="libslub", help="libslub-malloc.so")
    ap.add_argument("-r", dest="reps", type=int, default=3)
    ap.add_argument("-s", dest="scale", type=float, default=1.0)
    ap.add_argument("-a", dest="allocators")
    ap.add_argument("-w", dest="workloads")
    ap.add_argument("-o", dest="out")
    ap.add_argument("-X", dest="spawn", help="bench_spawn")
    ap.add_argument("-l", dest="list", action="store_true")
    args = ap.parse_args()
    if args.list:
        for name, _, fn in WORKLOADS:
            print("%-14s %s" % (name, " ".join(fn.__doc__.split())))
        return 0
    if args.reps < 1 or args.scale <= 0:
        sys.exit("bench_programs: -r must be at least 1 and -s above 0")
    allocs = allocators(args)
    spawn = find_spawn(args)
    names = [n for n, _ in allocs]
    chosen = WORKLOADS
    if args.workloads:
        want = args.workloads.split(",")
        unknown = set(want) - {w for w, _, _ in WORKLOADS}
        if unknown:
            sys.exit("bench_programs: unknown workload %s (-l lists them)" % ",".join(sorted(unknown)))
        chosen = [w for w in WORKLOADS if w[0] in want]

    print("bench_programs: real programs under each allocator (LD_PRELOAD), scale %g, "
          "median of %d, repetitions alternated; %d CPUs" % (args.scale, args.reps,
                                                             os.cpu_count()))
    print("best peer: the best of %s (time: ratio > 1 is faster; RSS: ratio > 1 is more)\n"
          % ", ".join(n for n in names if n in PEER_NAMES))
    runs, wrong, rows_t, rows_m, skipped = [], [], [], [], []
    top = tempfile.mkdtemp(prefix="bench_programs.")
    try:
        for wl, prog, fn in chosen:
            if not (os.path.isabs(prog) and os.access(prog, os.X_OK)) and not shutil.which(prog):
                skipped.append("%s (no %s)" % (wl, prog))
                continue
            work = os.path.join(top, wl)
            os.mkdir(work)
            spec = fn(work, args.scale)
            walls = {n: [] for n in names}
            peaks = {n: [] for n in names}
            outputs = {}
            for rep in range(args.reps):
                turn = allocs[rep % len(allocs):] + allocs[:rep % len(allocs)]
                for name, preload in turn:
                    try:
                        wall, cpu, kb, out = run_once(spec, work, preload, spawn)
                    except RuntimeError as e:
                        wrong.append("%s under %s: %s" % (wl, name, e))
                        continue
                    walls[name].append(wall)
                    peaks[name].append(kb)
                    outputs.setdefault(name, out)
                    if out != outputs.get(name):
                        wrong.append("%s under %s: the output changed between repetitions" % (wl, name))
                    runs.append({"workload": wl, "allocator": name, "rep": rep,
                                 "wall_s": round(wall, 4), "cpu_s": round(cpu, 4),
                                 "maxrss_kb": kb})
            for name in names:
                if name in outputs and "glibc" in outputs and outputs[name] != outputs["glibc"]:
                    wrong.append("%s under %s: the output differs from glibc's" % (wl, name))
            if all(walls[n] for n in names):
                rows_t.append((wl, {n: statistics.median(walls[n]) for n in names}))
                rows_m.append((wl, {n: statistics.median(peaks[n]) / 1024 for n in names}))
            shutil.rmtree(work, ignore_errors=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)

    table("wall time, seconds, median of %d (ratio: the best peer's time over this one's)"
          % args.reps, rows_t, names, "%.2f", lambda v, b: b / v, True)
    table("peak RSS, MiB (wait4 ru_maxrss), median of %d (ratio to the best peer)"
          % args.reps, rows_m, names, "%.1f", lambda v, b: v / b, True)
    for s in skipped:
        print("left out: %s" % s)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"scale": args.scale, "reps": args.reps, "cpus": os.cpu_count(),
                       "allocators": dict(allocs), "runs": runs,
                       "skipped": skipped, "wrong": wrong}, f, indent=1)
    for w in wrong:
        print("WRONG: %s" % w)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
