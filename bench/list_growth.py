#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""CPython lists grown a few items at a time: the item arrays grow by
realloc() through the 8..64 KiB classes, and a third of the lists is
emptied every tenth round. A pattern where every size-class allocator,
libslub's medium classes worst, keeps more than glibc (docs/malloc_gap.md).

Run it under each allocator and compare the peak RSS, e.g.
  LD_PRELOAD=build-release/libslub-malloc.so /usr/bin/time -f %M \\
      /usr/bin/python3 bench/list_growth.py 5000 400
It prints the items held at the end, the same under every allocator.

Or all of them in one run, repetitions alternated, the median peak RSS of
each and its ratio to glibc's (libslub twice: as it is, and with the free
objects' pages kept, policy/release_delay_ms=-1):
  /usr/bin/python3 bench/list_growth.py --compare \\
      build-release/libslub-malloc.so 5000 400 3
"""
import os
import random
import statistics
import subprocess
import sys

PEERS = [
    ("jemalloc", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"),
    ("tcmalloc", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"),
    ("mimalloc", "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"),
]


def peak_kb(preload, env_extra, args):
    """One child's peak RSS (KB, ru_maxrss of wait4) and its output."""
    env = dict(os.environ, **env_extra)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
    child = subprocess.Popen([sys.executable, __file__] + args, env=env,
                             stdout=subprocess.PIPE)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = status  # reaped here: Popen must not wait again
    if status:
        sys.exit("list_growth: a child failed under %s" % (preload or "glibc"))
    return usage.ru_maxrss, out


def compare(argv):
    libslub, args = os.path.abspath(argv[0]), argv[1:3]
    reps = int(argv[3]) if len(argv) > 3 else 3
    runs = [("glibc", None, {}), ("libslub", libslub, {}),
            ("libslub-keep", libslub, {"SLUB_CONFIG": "policy/release_delay_ms=-1"})]
    runs += [(n, p, {}) for n, p in PEERS if os.path.exists(p)]
    peaks = {name: [] for name, _, _ in runs}
    outputs = set()
    for rep in range(reps):
        turn = runs[rep % len(runs):] + runs[:rep % len(runs)]
        for name, preload, env in turn:
            kb, out = peak_kb(preload, env, args)
            peaks[name].append(kb)
            outputs.add(out)
    if len(outputs) != 1:
        sys.exit("list_growth: the allocators' outputs differ")
    base = statistics.median(peaks["glibc"])
    print("list_growth %s, peak RSS (KB), median of %d, ratio to glibc"
          % (" ".join(args), reps))
    for name, _, _ in runs:
        med = statistics.median(peaks[name])
        print("  %-13s %9d  %.2f  [%s]" % (name, med, med / base,
                                           ", ".join(map(str, peaks[name]))))


def main():
    lists = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    rng = random.Random(1)
    held = [[] for _ in range(lists)]
    for r in range(rounds):
        for i in range(0, lists, 1 + r % 5):
            held[i].extend(range(rng.randint(0, 40)))
        if r % 10 == 9:
            for i in range(0, lists, 3):
                held[i] = []
    print(sum(map(len, held)))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--compare":
        compare(sys.argv[2:])
    else:
        main()
