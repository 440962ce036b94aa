#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plots of bench_suite's results: bench_plot.py suite.json outdir

Writes outdir/<workload>.png (the metric against the rows: presets through
the kmem_cache API on the left, allocators through malloc on the right,
the mean with the repetitions' standard deviation) and outdir/summary.png
(every workload on one page). Needs python3-matplotlib (scripts/deps.sh
bench installs it); run under /usr/bin/python3, Debian's.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(wl, cols):
    """For each column: the row labels, means and stddevs where it ran."""
    out = {}
    for c in cols:
        xs, ys, es = [], [], []
        for i, row in enumerate(wl["rows"]):
            cell = row["cells"].get(c)
            if cell and cell["samples"]:
                xs.append(i)
                ys.append(cell["mean"])
                es.append(cell["stddev"])
        if xs:
            out[c] = (xs, ys, es)
    return out


def panel(ax, wl, cols, title, dashed):
    lo, hi = None, None
    for c, (xs, ys, es) in series(wl, cols).items():
        ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=c,
                    linestyle="--" if c in dashed else "-")
        lo = min(ys + ([lo] if lo else []))
        hi = max(ys + ([hi] if hi else []))
    # Means that span more than 20x (glibc's trims, 16 KiB messages) are
    # read on a log scale; the error bars are then only indicative.
    if lo and hi and lo > 0 and hi / lo > 20:
        ax.set_yscale("log")
    ax.set_xticks(range(len(wl["rows"])))
    ax.set_xticklabels([r["label"] for r in wl["rows"]], rotation=30,
                       fontsize=8)
    ax.set_xlabel(wl["row_what"], fontsize=8)
    ax.set_ylabel("%s (%s)" % (wl["unit"], wl["mean"]), fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: bench_plot.py suite.json outdir")
    with open(sys.argv[1]) as f:
        data = json.load(f)
    outdir = sys.argv[2]
    presets = [c["name"] for c in data["columns"] if c["api"] == "kmem"]
    peers = [c["name"] for c in data["columns"] if c["api"] == "malloc"]
    m = data["machine"]
    machine = "%d CPUs, %s" % (m["nproc"], m["cpu_model"])
    wls = data["workloads"]
    written = []
    for wl in wls:
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        panel(axes[0], wl, presets, "kmem_cache API, presets", set())
        panel(axes[1], wl, peers, "malloc API, allocators",
              {"libslub-malloc"})
        better = "higher" if wl["higher_better"] else "lower"
        fig.suptitle("%s: %s (%s is better)\n%s" % (wl["name"], wl["what"],
                                                    better, machine),
                     fontsize=9)
        fig.tight_layout()
        path = "%s/%s.png" % (outdir, wl["name"])
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    if wls:
        n = len(wls)
        fig, axes = plt.subplots(n, 2, figsize=(12, 3.2 * n), squeeze=False)
        for i, wl in enumerate(wls):
            better = "higher" if wl["higher_better"] else "lower"
            panel(axes[i][0], wl, presets, "%s, presets (%s is better)"
                  % (wl["name"], better), set())
            panel(axes[i][1], wl, peers, "%s, allocators" % wl["name"],
                  {"libslub-malloc"})
        fig.suptitle("bench_suite on %s" % machine, fontsize=10)
        fig.tight_layout()
        path = "%s/summary.png" % outdir
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
    print("plots: " + " ".join(written))


if __name__ == "__main__":
    main()
