"""Plot load.py's figures: latency (first token and final, P50 and P95) and answers/s against streams at once.

Usage:
    python benchmarks/load_plot.py benchmarks/results/load_workers.json --out docs/load_workers.png [--title T]

One figure with two panels; one line per variant (before/after) found in the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    rows = json.loads(args.results.read_text())
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    colours = dict(zip(variants, ["tab:red", "tab:blue", "tab:green", "tab:purple"], strict=False))

    fig, (lat, thr) = plt.subplots(1, 2, figsize=(11, 4.2))
    for variant in variants:
        mine = sorted((r for r in rows if r["variant"] == variant), key=lambda r: r["level"])
        levels = [r["level"] for r in mine]
        c = colours[variant]
        for key, style, what in (("first_ms", "-", "first token"), ("final_ms", ":", "final")):
            lat.plot(levels, [r[key].get("p95", float("nan")) / 1000 for r in mine], style, color=c, marker="o",
                     label=f"{variant}: {what} P95")  # fmt: skip
            lat.plot(levels, [r[key].get("p50", float("nan")) / 1000 for r in mine], style, color=c, alpha=0.4,
                     marker=".", label=f"{variant}: {what} P50")  # fmt: skip
        thr.plot(levels, [r["answers_per_s"] for r in mine], "-", color=c, marker="o", label=variant)
        for r in mine:
            if r["errors"] or r["rejected"]:
                thr.annotate(f"{r['errors']} err, {r['rejected']} 503", (r["level"], r["answers_per_s"]), fontsize=7)
    lat.set(xlabel="streams at once", ylabel="seconds", title="latency", xscale="log")
    thr.set(xlabel="streams at once", ylabel="answers / s", title="throughput", xscale="log")
    for ax in (lat, thr):
        ax.grid(True, alpha=0.3)
        ax.set_xticks(sorted({r["level"] for r in rows}))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    lat.legend(fontsize=7)
    thr.legend(fontsize=8)
    thr.set_ylim(bottom=0)
    lat.set_ylim(bottom=0)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
