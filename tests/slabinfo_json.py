#!/usr/bin/python3
"""slabinfo --json parses, and says what the table and the activity view say.

usage: slabinfo_json.py SLABINFO ARGS...

Runs SLABINFO ARGS with -B (sizes in bytes) and with -D, each once as text
and once with --json, on a source that does not change between the runs
(an idle process, an exit report), and compares them row by row.
"""
import json
import subprocess
import sys

tool, args = sys.argv[1], sys.argv[2:]
failures = []


def run(extra):
    out = subprocess.run([tool] + args + extra, check=True,
                         capture_output=True, text=True)
    return out.stdout


def same(what, text_value, json_value):
    if str(text_value) != str(json_value):
        failures.append(f"{what}: table {text_value!r}, json {json_value!r}")


def rows(text):
    """The rows of a table: its lines after the header, split in words."""
    return [line.split() for line in text.splitlines()[1:] if line.strip()]


def check_table():
    table = rows(run(["-B"]))
    doc = json.loads(run(["-B", "--json"]))
    caches = doc["caches"]
    same("number of caches", len(table), len(caches))
    for row, c in zip(table, caches):
        name = row[0]
        same(f"{name}: name", name, c["name"])
        same(f"{name}: objects", row[1], c["objects"])
        same(f"{name}: objsize", row[2], c["object_size"])
        same(f"{name}: space", row[3], c["space"])
        same(f"{name}: space = slabs << order", c["space"],
             c["slabs"] * (4096 << c["order"]))
        same(f"{name}: slabs/part/cpu", row[4],
             f"{c['slabs']}/{c['partial']}/{c['cpu_slabs']}")
        same(f"{name}: O/S", row[5], c["objs_per_slab"])
        same(f"{name}: O", row[6], c["order"])
        same(f"{name}: %Fr", row[7], c["pct_free"])
        same(f"{name}: %Ef", row[8], c["pct_eff"])
        same(f"{name}: Flg", row[9] if len(row) > 9 else "", c["flags"])
    same("totals.objects", sum(c["objects"] for c in caches),
         doc["totals"]["objects"])
    same("page_alloc buddyinfo orders", len(doc["page_alloc"]["buddyinfo"]), 11)
    same("pcp_count per CPU", len(doc["page_alloc"]["counters"]["pcp_count"]["cpus"]),
         doc["process"]["nr_cpu_ids"])
    return len(caches)


def check_activity():
    table = rows(run(["-D"]))
    caches = json.loads(run(["-D", "--json"]))["caches"]
    same("number of caches (-D)", len(table), len(caches))
    for row, c in zip(table, caches):
        name = row[0]
        same(f"{name}: alloc", row[2], c["alloc"])
        # The program's allocations: the sheaves', and the slabs' but for
        # what the sheaves took from them (src/slabinfo.h, si_allocs()).
        same(f"{name}: alloc = sheaf + fast + slow - refill", c["alloc"],
             c["alloc_cpu_sheaf"] + max(0, c["alloc_fastpath"] +
                                        c["alloc_slowpath"] - c["sheaf_refill"]))
        same(f"{name}: free", row[3], c["free"])
        same(f"{name}: %Fast alloc", row[4], c["pct_fast_alloc"])
        same(f"{name}: %Fast free", row[5], c["pct_fast_free"])
        same(f"{name}: Fallb", row[6], c["order_fallback"])
        same(f"{name}: CmpX", row[8], c["cmpxchg_double_fail"])
        same(f"{name}: Rseq", row[9], c["cmpxchg_double_cpu_fail"])
        same(f"{name}: Lock", row[10], c["list_lock"])


n = check_table()
check_activity()
for f in failures:
    print("FAILED:", f)
print(f"slabinfo_json: {n} caches compared, {len(failures)} differences")
sys.exit(1 if failures or n == 0 else 0)
