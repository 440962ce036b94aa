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
"""
import random
import sys


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
    main()
