"""The peer comparison as a bar chart: drain jobs/s and bulk enqueue rows/s of rota and
its peers, from a JSON of figures copied out of one run of `python3 -m benchmarks run`.

    python3 -m benchmarks.peer_chart [--figures docs/images/peers.json]
        [--out docs/images/peers.png]

The JSON holds `run` (which run the figures come from, printed under the chart), `note`,
and per metric (`drain`, `enqueue`) subject -> [median, min, max]. Needs matplotlib (in
benchmarks/.venv). Draws what it is given: it measures nothing.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
METRICS = (("drain", "drain, jobs/s"), ("enqueue", "bulk enqueue, rows/s"))


def plot(figures: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chart, axes = plt.subplots(1, len(METRICS), figsize=(8.0, 3.4), dpi=100)
    for axis, (metric, label) in zip(axes, METRICS, strict=True):
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.peer_chart")
    parser.add_argument("--figures", type=Path, default=ROOT / "docs/images/peers.json")
    parser.add_argument("--out", type=Path, default=ROOT / "docs/images/peers.png")
    args = parser.parse_args(argv)
    plot(json.loads(args.figures.read_text()), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
