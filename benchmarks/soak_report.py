"""The soak suite's report, from the figures it measured: the table per system and phase
(text and Markdown), the held-snapshot targets met or not, and the time-series plots. Also run
alone on a results file, measuring nothing:

    python -m benchmarks chart soak benchmarks/results/soak.json --out docs/images/soak
    python -m benchmarks chart soak rota.json pgqueuer.json --out DIR   # runs drawn together
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from benchmarks import soak_plan


def _ratio(value: Any) -> float:
    """A ratio of the table, None (NaN in the JSON) as infinitely bad."""
    return math.inf if value is None or math.isnan(value) else float(value)


# -- the report -----------------------------------------------------------------------------

HEAD = (f"{'system':<14}{'phase':<22}{'offered/s':>10}{'done/s':>8}{'backlog':>9}"
        f"{'growth':>8}{'p50 ms':>9}{'p99 ms':>9}{'p50 x':>7}{'p99 x':>7}{'dead max':>10}"
        f"{'claim idx MiB':>14}{'claim ms':>9}{'bystander ms':>13}{'back in s':>10}")


def _fmt(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def table(tables: dict[str, list[dict[str, Any]]]) -> str:
    lines = [HEAD, "-" * len(HEAD)]
    for name, entries in tables.items():
        for e in entries:
            back = e["recovery_s"]
            back_text = ("not yet" if e["kind"] == "held" and back is None
                         else _fmt(back, ".0f"))
            lines.append(
                f"{name:<14}{e['phase']:<22}{e['offered_per_s']:>10.0f}"
                f"{e['completed_per_s']:>8.0f}{e['backlog_end']:>9}{e['backlog_growth']:>8}"
                f"{_fmt(e['p50_ms'], '.1f'):>9}{_fmt(e['p99_ms'], '.1f'):>9}"
                f"{_fmt(e['p50_ratio'], '.1f'):>7}{_fmt(e['p99_ratio'], '.1f'):>7}"
                f"{_fmt(e['max_dead'], ',.0f'):>10}{_fmt(e['max_claim_index_mib'], '.2f'):>14}"
                f"{_fmt(e['claim_mean_ms'], '.3f'):>9}{_fmt(e['bystander_ms'], '.2f'):>13}"
                f"{back_text:>10}")
    return "\n".join(lines)


def markdown_table(tables: dict[str, list[dict[str, Any]]]) -> str:
    """The same table in Markdown, for docs/benchmarks.md."""
    head = ("| system | phase | offered/s | done/s | backlog at end | growth | p50 ms | "
            "p99 ms | p99 / clean | max dead tuples | claim index MiB | claim ms | "
            "back to clean |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for name, entries in tables.items():
        for e in entries:
            back = e["recovery_s"]
            back_text = ("not within the recovery" if e["kind"] == "held" and back is None
                         else (f"{back:.0f} s" if back is not None else ""))
            lines.append(
                f"| {name} | {e['phase']} | {e['offered_per_s']:.0f} | "
                f"{e['completed_per_s']:.0f} | {e['backlog_end']:,} | "
                f"{e['backlog_growth']:+,} | {_fmt(e['p50_ms'], '.1f')} | "
                f"{_fmt(e['p99_ms'], '.1f')} | {_fmt(e['p99_ratio'], '.1f')}x | "
                f"{_fmt(e['max_dead'], ',.0f')} | {_fmt(e['max_claim_index_mib'], '.2f')} | "
                f"{_fmt(e['claim_mean_ms'], '.3f')} | {back_text} |")
    return "\n".join(lines)


STATEMENTS_SHOWN = 8


def statements_markdown(tables: dict[str, list[dict[str, Any]]],
                        shown: int = STATEMENTS_SHOWN) -> str:
    """Per system, its statements that took the most server time over the run (rota's
    named by their SQL file): calls a second in the clean phase, then per phase the mean
    time of a call and, in brackets, the worst mean over one sampling interval."""
    parts = []
    for name, entries in tables.items():
        spent: dict[str, float] = {}
        for entry in entries:
            for statement, figures in entry.get("statements", {}).items():
                spent[statement] = spent.get(statement, 0.0) + figures["total_ms"]
        if not spent:
            continue
        top = sorted(spent, key=lambda statement: -spent[statement])[:shown]
        head = ("| " + name + " statement | calls/s clean | "
                + " | ".join(f"{e['phase']} ms" for e in entries) + " |")
        lines = [head, "|" + "---|" * (len(entries) + 2)]
        for statement in top:
            cells = []
            for entry in entries:
                figures = entry.get("statements", {}).get(statement)
                cells.append("" if figures is None else
                             f"{figures['mean_ms']:.3f} ({figures['worst_mean_ms']:.2f})")
            clean = entries[0].get("statements", {}).get(statement)
            rate = "" if clean is None else f"{clean['calls_per_s']:.2f}"
            lines.append(f"| `{statement.replace('|', '/')}` | {rate} | "
                         + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def markdown(tables: dict[str, list[dict[str, Any]]]) -> str:
    """The phases' table and the statements' (a run of old has none), in Markdown."""
    return "\n\n".join(part for part in (markdown_table(tables), statements_markdown(tables))
                       if part)


def _mark(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _held(tables: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, dict[str, Any]]]:
    """mode -> system -> its held phase's entry."""
    got: dict[str, dict[str, dict[str, Any]]] = {}
    for name, entries in tables.items():
        for entry in entries:
            if entry["kind"] == "held":
                got.setdefault(entry["mode"], {})[name] = entry
    return got


def overloaded(entries: list[dict[str, Any]]) -> bool:
    """Whether the system completed under 95 % of the offered rate in the clean phase: its
    ratios to clean are then against a baseline already behind, not comparable."""
    clean = next((e for e in entries if e["kind"] == "clean"), None)
    return clean is not None and clean["completed_per_s"] < 0.95 * clean["offered_per_s"]


def _limit(entry: dict[str, Any], behind: bool) -> int:
    """The backlog growth still called none (an overloaded system's clean backlog is no
    measure of noise)."""
    return (soak_plan.near_zero(entry["offered_per_s"]) if behind
            else int(entry["backlog_limit"]))


def _verdict(entry: dict[str, Any], behind: bool) -> soak_plan.Verdict:
    limit = _limit(entry, behind)
    return soak_plan.verdict(entry["backlog_growth"], limit, _ratio(entry["p99_ratio"]),
                             entry["recovery_s"])


def _ahead(mine: dict[str, Any], other: dict[str, Any], other_behind: bool) -> bool:
    """At least as good as `other` on each target's figure; against a peer overloaded
    from the start, on completed/s and backlog growth (its ratios compare nothing)."""
    if other_behind:
        return (mine["completed_per_s"] >= other["completed_per_s"]
                and mine["backlog_growth"] <= other["backlog_growth"])
    back = math.inf if mine["recovery_s"] is None else mine["recovery_s"]
    other_back = math.inf if other["recovery_s"] is None else other["recovery_s"]
    return (mine["backlog_growth"] <= other["backlog_growth"]
            and _ratio(mine["p99_ratio"]) <= _ratio(other["p99_ratio"])
            and back <= other_back)


def targets(tables: dict[str, list[dict[str, Any]]]) -> str:
    """The held-snapshot targets per system and held phase, met or not; and whether each rota
    is ahead of every peer measured on all three. Figures, never an exit code."""
    lines = ["targets per held phase: keeps up (no backlog growth), p99 <= 3x "
             "clean, back to clean within 60 s"]
    behind = {name: overloaded(entries) for name, entries in tables.items()}
    for name in [n for n, b in behind.items() if b]:
        clean = next(e for e in tables[name] if e["kind"] == "clean")
        lines.append(f"  {name}: overloaded already in the clean phase "
                     f"({clean['completed_per_s']:.0f} of {clean['offered_per_s']:.0f} jobs/s"
                     "): its ratios to clean compare nothing")
    for mode, by_system in _held(tables).items():
        for name, e in by_system.items():
            v = _verdict(e, behind[name])
            back = e["recovery_s"]
            lines.append(
                f"  {name:<14}{mode:<11} keeps up: {_mark(v.keeps_up)} (growth "
                f"{e['backlog_growth']:+,}, limit {_limit(e, behind[name])}); p99 x3: "
                f"{_mark(v.p99_within_3x)} ({_fmt(e['p99_ratio'], '.1f')}x); back in 60 s: "
                f"{_mark(v.back_within_60s)} ({'never' if back is None else f'{back:.0f} s'})")
        peers = {n: e for n, e in by_system.items() if not n.startswith("rota")}
        for name in [n for n in by_system if n.startswith("rota") and peers]:
            ahead = all(_ahead(by_system[name], other, behind[peer])
                        for peer, other in peers.items())
            lines.append(f"  {name} ahead of {', '.join(peers)} in {mode}: "
                         f"{'yes' if ahead else 'no'}")
    return "\n".join(lines)


# -- the plots ------------------------------------------------------------------------------

PLOTTED = (
    ("completed_per_s", "completed jobs/s", False),
    ("backlog", "due backlog (offered - started), symlog", "symlog"),
    ("p50_ms", "pickup p50, ms", True),
    ("p99_ms", "pickup p99, ms", True),
    ("claim_mean_ms", "claim statement mean time, ms", True),
    ("dead", "dead tuples of the system's tables", False),
    ("hot_table_mib", "hot table size, MiB", False),
    ("claim_index_mib", "claim index size, MiB", False),
    ("bystander_ms", "bystander lookup, ms (median of 5)", True),
)
MODE_COLORS = {"idle_xact": "tab:red", "rr_readers": "tab:purple", "slot": "tab:olive"}


def plot(document: dict[str, Any], out_dir: Path) -> list[Path]:
    """One PNG per figure: a line per system, the held phases shaded."""
    from benchmarks.chart import _pyplot

    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    phases = next(iter(document["systems"].values()))["phases"] if document["systems"] else []
    for key, label, log in PLOTTED:
        chart, axis = plt.subplots(figsize=(9.0, 3.2), dpi=100)
        for phase in phases:
            if phase["kind"] == "held":
                axis.axvspan(phase["start_s"] / 60, phase["end_s"] / 60, alpha=0.12,
                             color=MODE_COLORS.get(phase["mode"], "gray"),
                             label=soak_plan.MODE_TITLES.get(phase["mode"], phase["mode"]))
        for name, doc in document["systems"].items():
            points = [(r["t"] / 60, r[key]) for r in doc["series"]
                      if isinstance(r.get(key), (int, float)) and not math.isnan(r[key])
                      and (log is not True or r[key] > 0)]
            if points:
                axis.plot([p[0] for p in points], [p[1] for p in points], label=name,
                          linewidth=1.1)
        if log == "symlog":  # a backlog of zero stays on the plot; an overloaded peer too
            axis.set_yscale("symlog", linthresh=100)
        elif log:
            axis.set_yscale("log")
        axis.set_xlabel("minutes")
        axis.set_title(f"{label} ({document['note']})", fontsize=9)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=7, loc="upper left")
        chart.tight_layout()
        path = out_dir / f"{key}.png"
        chart.savefig(path)
        plt.close(chart)
        written.append(path)
    return written




# Soak settings added since the first kept runs, with the value those runs had.
SETTINGS_ADDED = {"soak_preload": 0, "soak_jobs_reloptions": "", "soak_queue_limit": 0}


def _compared(settings: dict[str, Any]) -> dict[str, Any]:
    """A run's settings that must be the same for runs to be drawn together: all but the
    systems measured."""
    return {**SETTINGS_ADDED, **{key: value for key, value in settings.items()
                                 if key != "soak_systems"}}


def merged(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """One document of the systems of several soak runs (the full phases take ~130 minutes a
    system, so the systems of one comparison may come from separate runs). The runs must
    share their soak settings (rate and phases, all but the systems); a system measured
    twice is refused."""
    first = _compared(documents[0]["settings"])
    systems: dict[str, Any] = {}
    for document in documents:
        settings = _compared(document["settings"])
        if settings != first:
            differ = sorted(key for key in {*settings, *first}
                            if settings.get(key) != first.get(key))
            raise ValueError(f"these runs differ in {', '.join(differ)}: only runs with "
                             "the same rate and phases can be drawn together")
        for name, system in document["systems"].items():
            if name in systems:
                raise ValueError(f"{name} is in two of these runs: give one of them")
            systems[name] = system
    return {**documents[0], "settings": {**first, "soak_systems": list(systems)},
            "systems": systems}


def main(document_paths: list[Path], out_dir: Path) -> int:
    """Print the table and the targets of one soak.json, or of several runs' merged
    (`merged`), and draw its plots into out_dir. One file also gets its tables as Markdown
    beside it."""
    import gzip
    import json

    def load(path: Path) -> dict[str, Any]:  # a kept run may be gzipped (soak.json.gz)
        text = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text()
        document: dict[str, Any] = json.loads(text)
        return document

    try:
        document = merged([load(path) for path in document_paths])
    except ValueError as error:
        print(f"chart soak: {error}")
        return 2
    tables = {name: doc["table"] for name, doc in document["systems"].items()}
    print(table(tables))
    print(targets(tables))
    if len(document_paths) == 1 and document_paths[0].suffix == ".json":
        document_paths[0].with_suffix(".md").write_text(markdown(tables) + "\n")
    else:
        print(markdown(tables))
    written = plot(document, out_dir)
    print(f"wrote {len(written)} plots under {out_dir}")
    return 0
