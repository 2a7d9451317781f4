"""`python -m benchmarks chart peers|queues|scale JSON --out PNG`: the plots, drawn from
figures already measured (matplotlib, in benchmarks/.venv). It measures nothing.

- peers: drain jobs/s and bulk enqueue rows/s of rota and its peers, median with min-max
  (`python -m benchmarks peers` writes the JSON: `run`, `note`, and per metric, `drain`
  and `enqueue`, subject -> [median, min, max]);
- queues: the queues suite's drain rate over tenant Queues as a share of one Queue's, and
  its store round trips per job (`python -m benchmarks.suites.queues --json`);
- scale: claim latency against table size (`python -m benchmarks.suites.scale --json`);
- fairness: the light tenants' p99 wait under each scheduling model, log scale, a bar
  group per store (`python -m benchmarks run fairness` writes docs/images/fairness.json);
- soak: the soak suite's time series, one PNG per figure into the directory --out
  (default docs/images/soak), with its table and targets (`python -m benchmarks run
  soak` writes benchmarks/results/soak.json); several runs' files are drawn together.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PEER_METRICS = (("drain", "drain, jobs/s"), ("enqueue", "bulk enqueue, rows/s"))
POOL = 20  # the queues suite's pool: one claim per pass is 1 / POOL round trips per job


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def peers(figures: dict[str, Any], out: Path) -> None:
    plt = _pyplot()
    chart, axes = plt.subplots(1, len(PEER_METRICS), figsize=(8.0, 3.4), dpi=100)
    for axis, (metric, label) in zip(axes, PEER_METRICS, strict=True):
        subjects = list(figures[metric])
        medians = [figures[metric][s][0] for s in subjects]
        below = [m - figures[metric][s][1] for m, s in zip(medians, subjects, strict=True)]
        above = [figures[metric][s][2] - m for m, s in zip(medians, subjects, strict=True)]
        colors = ["tab:orange" if s.startswith("rota") else "tab:gray" for s in subjects]
        positions = range(len(subjects))
        axis.bar(positions, medians, color=colors, yerr=[below, above], capsize=3)
        for x, value, over in zip(positions, medians, above, strict=True):
            axis.text(x, value + over, f"{value:,.0f}", ha="center", va="bottom", fontsize=7)
        axis.margins(y=0.12)
        axis.set_xticks(list(positions), subjects, rotation=20, fontsize=8)
        axis.set_title(label, fontsize=9)
        axis.grid(True, axis="y", alpha=0.3)
    chart.text(0.01, 0.01, figures["run"], fontsize=6, color="dimgray")
    chart.tight_layout(rect=(0, 0.04, 1, 1))
    chart.savefig(out)
    plt.close(chart)


def queues(rows: Sequence[dict[str, dict[str, Any]]], out: Path) -> None:
    """`rows`: the queues suite's JSON, each {"single": ..., "tenants": ...}."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4), dpi=90)
    markers = {"memory": "o", "sqlite": "s", "postgres": "^"}
    colors = {"memory": "tab:blue", "sqlite": "tab:orange", "postgres": "tab:green"}
    styles = {0.01: ":", 0.1: "--", 1.0: "-"}
    pairs = [(row["single"], row["tenants"]) for row in rows]
    for kind in dict.fromkeys(m["store"] for _, m in pairs):
        for share, style in styles.items():
            line = [(single, m) for single, m in pairs if m["store"] == kind
                    and abs(m["backlogged"] / m["queues"] - share) < share / 2]
            if not line:
                continue
            xs = [m["queues"] for _, m in line]
            label = f"{kind}, {share:.0%} backlogged"
            left.plot(xs, [m["jobs_per_s"] / single["jobs_per_s"] for single, m in line],
                      style, marker=markers[kind], color=colors[kind], label=label)
            right.plot(xs, [m["round_trips"] / m["jobs"] for _, m in line], style,
                       marker=markers[kind], color=colors[kind], label=label)
    left.axhline(0.8, color="grey", linewidth=0.8)
    left.set_xscale("log")
    left.set_ylim(0, 1.8)
    left.set_xlabel("Queues in the Weighted group")
    left.set_ylabel("drain rate / single-Queue rate")
    right.axhline(1 / POOL, color="grey", linewidth=0.8)
    right.set_xscale("log")
    right.set_ylim(0, 0.1)
    right.set_xlabel("Queues in the Weighted group")
    right.set_ylabel("store round trips per job")
    left.legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def scale(summaries: Sequence[dict[str, Any]], out: Path,
          title: str = "claim latency against table size") -> None:
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    colors = {"sqlite": "tab:orange", "postgres": "tab:green"}
    for kind in ("sqlite", "postgres"):
        mine = sorted((one for one in summaries if one["store"] == kind),
                      key=lambda one: one["rows"])
        if not mine:
            continue
        rows = [one["rows"] for one in mine]
        axis.plot(rows, [one["claim_p50_ms"] for one in mine], "o-", color=colors[kind],
                  label=f"{kind} p50")
        axis.plot(rows, [one["claim_p99_ms"] for one in mine], "s--", color=colors[kind],
                  label=f"{kind} p99")
    axis.set_xscale("log")
    axis.set_xlabel("rows in the jobs table (half finished, half scheduled, 100 Queues)")
    axis.set_yscale("log")  # SQLite's ~0.3 ms and PostgreSQL's ~20 ms p99 on one chart
    axis.set_ylabel("claim of 20, ms (log)")
    axis.set_title(title, fontsize=9)
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out)
    plt.close(figure)


def fairness(document: dict[str, Any], out: Path) -> None:
    """Bars: the median light tenant's p99 wait per model; a tick: the worst tenant's."""
    plt = _pyplot()
    stores = list(document["outcomes"])
    models = list(dict.fromkeys(m for kind in stores for m in document["outcomes"][kind]))
    cap = document["workload"]["cap"]
    figure, axis = plt.subplots(figsize=(8.0, 4.4), dpi=100)
    width = 0.8 / len(models)
    colors = plt.get_cmap("tab10")
    for n, model in enumerate(models):
        xs = [s + (n - (len(models) - 1) / 2) * width for s in range(len(stores))]
        found = [document["outcomes"][kind].get(model) for kind in stores]
        medians = [o.get("p99_median_ms", 0.0) if o else 0.0 for o in found]
        worst = [o.get("p99_worst_ms", 0.0) if o else 0.0 for o in found]
        label = f"FIFO + cap {cap}" if model == "FIFO + cap" else model
        axis.bar(xs, medians, width * 0.92, color=colors(n), label=label)
        axis.scatter(xs, worst, marker="_", s=90, color="black", zorder=3)
        for x, value in zip(xs, medians, strict=True):
            if value:
                axis.text(x, value * 1.08, f"{value:,.0f}" if value >= 10 else f"{value:.1f}",
                          ha="center", va="bottom", fontsize=6)
    axis.set_yscale("log")
    light = document["workload"]["light_tenants"]
    labels = [f"{kind}\n{run['heavy_jobs']:,}-job burst, {light / run['light_period_s']:,.0f} "
              f"light jobs/s, {run['at']}" if (run := document.get("stores", {}).get(kind))
              else kind for kind in stores]
    axis.set_xticks(range(len(stores)), labels, fontsize=8)
    axis.set_ylabel("light tenants' p99 wait, ms (log)")
    axis.set_title("median light tenant's p99 wait (bar) and the worst tenant's (tick)",
                   fontsize=9)
    axis.grid(True, axis="y", alpha=0.3)
    axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3,
                frameon=False)
    axis.margins(y=0.15)
    figure.text(0.01, 0.01, document["run"], fontsize=6, color="dimgray")
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(out)
    plt.close(figure)


def main(options: argparse.Namespace) -> int:
    if options.chart == "soak":  # a directory of plots, one per figure; runs drawn together
        from benchmarks import soak_report
        from benchmarks.venv import ROOT

        return soak_report.main(options.json, options.out or ROOT / "docs" / "images" / "soak")
    if len(options.json) > 1:
        print(f"chart {options.chart}: one JSON file (only soak draws several runs together)")
        return 2
    (path,) = options.json
    document = json.loads(path.read_text())
    out = options.out or path.with_suffix(".png")
    if options.chart == "peers":
        peers(document, out)
    elif options.chart == "queues":
        queues(document, out)
    elif options.chart == "fairness":
        fairness(document, out)
    else:
        scale(document["summaries"], out, options.title)
    print(f"wrote {out}")
    return 0
