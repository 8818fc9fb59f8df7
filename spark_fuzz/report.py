"""``gapless report``: a static HTML report of the campaigns under an output directory.

For each campaign: the summary by verdict and invariant, and four PNG plots drawn with
matplotlib (Agg backend) in the spirit of the papers' own figures [GD §4.2, Figures 6–8]:

1. verdicts by fault kind (stacked bars; a schedule counts once per kind it holds);
2. the latency distribution (per-schedule p50 and p99, virtual milliseconds);
3. nacks against faults (per schedule: fault events vs nacks sent);
4. lattice-transition coverage (how often each knowledge and curiosity transition was
   exercised across the campaign, e.g. ``K:Q->D``, ``C:N->C`` [GD §2.1, §2.4]), with every
   transition the lattices allow (:func:`lattice_transitions`) that the campaign never
   exercised named on the plot and under it.

Every plot's title says what was fuzzed (protocol, variant, topology, schedules); every axis
says its unit.

Counterexamples are linked (relative links), with the command that replays each one.
The report goes to ``DIR/report/`` (``index.html`` plus PNGs), replaced atomically.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import textwrap
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Final

from gapless.impl.errors import GaplessError
from gapless.spark_fuzz.store import iter_campaign_dirs, read_faults, read_rows
from gapless.spark_fuzz.transitions import coverage_of, coverage_report, reachable

__all__ = ["ReportError", "lattice_transitions", "write_report"]

VERDICT_COLOURS = {"pass": "#4c9f70", "violation": "#d1495b", "error": "#edae49", "timeout": "#66a"}


class ReportError(GaplessError, ValueError):
    """A directory that holds no campaign results (message names it and what is expected)."""


_LOWERINGS: Final = ("K:D->F", "K:D->F(filter)", "C:C->N")
"""Transitions that are not joins but that GD's roles make: a delivered D becomes F at the
SHB, a D a downstream filter drops is F for that cell, curiosity is forgotten after the
minimum nack repetition interval [GD §2.3, §3.1]."""
#: characters per line of a plot title (a 7-inch figure at font size 9)
_TITLE_WIDTH: Final = 95


def lattice_transitions() -> tuple[str, ...]:
    """Every transition the lattices allow, labelled as the roles' coverage labels are: a
    strict step up the knowledge order (``K:Q->D``, ``K:D->D*``, ... [GD §2.1, DUR §3]) or
    the curiosity chain N < C < A (``C:N->C`` ... [GD §2.4]), plus :data:`_LOWERINGS`."""
    from gapless.impl.curiosity import A, C, N
    from gapless.impl.knowledge import DSTAR, D, E, F, L, Q, S

    knowledge = {"Q": Q, "L": L, "D": D("a"), "D*": DSTAR("a"), "F": F, "S": S, "E": E}
    curiosity = {"N": N, "C": C, "A": A}
    steps = {
        f"K:{a}->{b}"
        for a, x in knowledge.items()
        for b, y in knowledge.items()
        if a != b and x.leq(y)
    }
    steps |= {
        f"C:{a}->{b}"
        for a, x in curiosity.items()
        for b, y in curiosity.items()
        if a != b and x.leq(y)
    }
    return tuple(sorted(steps | set(_LOWERINGS)))


def _what(config: dict[str, Any], rows: int) -> str:
    """What a campaign fuzzed, for titles: protocol, variant, topology, schedules, and the
    share of the schedules each ``[mix.NAME]`` setup ran instead, with what it changes."""
    protocol = config["protocol"] + (f" ({config['backend']})" if config.get("backend") else "")
    what = (
        f"{protocol}, variant {config['variant']}, topology {config['topology']}, {rows} schedules"
    )
    mix = config.get("mix") or {}
    if mix:
        parts = []
        for name in sorted(mix):
            setup = mix[name]
            changes = [f"topology {setup['topology']}"] if "topology" in setup else []
            changes += [f"{k} = {v}" for k, v in sorted((setup.get("run_config") or {}).items())]
            if "workload" in setup:
                changes.append("its own workload")
            share = f"{float(setup['share']):.0%}"
            parts.append(f"{name} {share}" + (f" ({', '.join(changes)})" if changes else ""))
        # wrapped to the plots' width: one long line was cut off at both edges
        mixed = "mix (drawn per schedule): " + "; ".join(parts)
        what += "\n" + "\n".join(textwrap.wrap(mixed, _TITLE_WIDTH))
    return what


def _campaign_dirs(directory: Path) -> list[Path]:
    if directory.name.startswith("campaign_id=") and (directory / "_manifest.json").exists():
        return [directory]
    return [d for d in iter_campaign_dirs(directory) if (d / "_manifest.json").exists()]


def _plots(cdir: Path, target: Path, prefix: str) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    manifest = json.loads((cdir / "_manifest.json").read_text(encoding="utf-8"))
    rows = read_rows(cdir).to_pylist()
    what = _what(manifest["config"], len(rows))
    faults = {r["seed"]: r for r in read_faults(cdir).to_pylist()}
    files: dict[str, str] = {}

    by_kind: dict[str, Counter[str]] = {}
    for info in manifest["chunks"].values():
        for kind, counts in info["by_fault_kind"].items():
            by_kind.setdefault(kind, Counter()).update(counts)
    kinds = sorted(by_kind)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bottom = [0] * len(kinds)
    for verdict, colour in VERDICT_COLOURS.items():
        values = [by_kind[k].get(verdict, 0) for k in kinds]
        if any(values):
            ax.bar(kinds, values, bottom=bottom, label=verdict, color=colour)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("schedules (count)")
    ax.set_xlabel("fault kind (a schedule counts once per kind it holds)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"verdicts by fault kind\n{what}", fontsize=9)
    ax.legend(fontsize=8)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    fig.tight_layout()
    files["verdicts"] = f"{prefix}-verdicts.png"
    fig.savefig(target / files["verdicts"], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.6))
    p50 = [r["latency_p50"] for r in rows if r["delivered"]]
    p99 = [r["latency_p99"] for r in rows if r["delivered"]]
    if p50:
        ax.hist([p50, p99], bins=40, label=["p50", "p99"], color=["#30638e", "#d1495b"])
        ax.legend(fontsize=8)
    ax.set_xlabel("latency per schedule (simulated ms)")
    ax.set_ylabel("schedules (count)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"latency distribution (per-schedule p50 and p99)\n{what}", fontsize=9)
    fig.tight_layout()
    files["latency"] = f"{prefix}-latency.png"
    fig.savefig(target / files["latency"], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.6))
    for verdict, colour in VERDICT_COLOURS.items():
        xs = [
            faults[r["seed"]]["fault_events"]
            for r in rows
            if r["verdict"] == verdict and r["seed"] in faults
        ]
        ys = [r["nacks"] for r in rows if r["verdict"] == verdict and r["seed"] in faults]
        if xs:
            ax.scatter(xs, ys, s=10, alpha=0.6, label=verdict, color=colour)
    ax.set_xlabel("fault events in the schedule (count)")
    ax.set_ylabel("nack messages sent (count)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"nacks against faults (one point per schedule)\n{what}", fontsize=9)
    if rows:
        ax.legend(fontsize=8)
    fig.tight_layout()
    files["nacks"] = f"{prefix}-nacks.png"
    fig.savefig(target / files["nacks"], dpi=90)
    plt.close(fig)

    coverage: Counter[str] = Counter()
    for r in rows:
        coverage.update(coverage_of(r))
    universe = reachable(manifest["config"]["protocol"])
    if universe:
        _roles_coverage_plot(plt, coverage, universe, what)
    else:
        lattice = Counter({k: v for k, v in coverage.items() if not k.startswith("R:")})
        _coverage_plot(plt, lattice, never_exercised(lattice), what)
    fig = plt.gcf()
    fig.tight_layout()
    files["coverage"] = f"{prefix}-coverage.png"
    fig.savefig(target / files["coverage"], dpi=90)
    plt.close(fig)
    return files


def never_exercised(coverage: Counter[str]) -> list[str]:
    """The transitions the lattices allow that ``coverage`` never counted."""
    return [t for t in lattice_transitions() if not coverage.get(t)]


def _bars_and_never(
    plt: Any, counts: list[tuple[str, int]], never: list[str], mark: str, row: float
) -> Any:
    """Horizontal bars of ``counts`` (log scale), then the ``never`` labels below them, greyed
    and marked ``mark`` (no bar: zero has no place on a log axis). Returns the axes."""
    n = len(counts) + len(never)
    _fig, ax = plt.subplots(figsize=(7.5, max(3.0, row * n + 1.8)))
    if counts:
        ax.barh(range(len(counts)), [c for _t, c in counts], color="#30638e")
        ax.set_xscale("log")
    for y in range(len(counts), n):
        ax.text(
            0.01,
            y,
            mark,
            color="#888888",
            fontsize=7,
            va="center",
            transform=ax.get_yaxis_transform(),
        )
    ax.set_yticks(list(range(n)), [*(t for t, _c in counts), *never])
    for tick in ax.get_yticklabels()[len(counts) :]:
        tick.set_color("#888888")
    ax.set_ylim(n - 0.5, -0.5)
    return ax


def _coverage_plot(plt: Any, coverage: Counter[str], never: list[str], what: str) -> None:
    """Exercised lattice transitions as bars (log scale); the allowed ones never exercised
    listed below them, greyed and marked "never exercised"."""
    counts = [(t, coverage[t]) for t in sorted(coverage)]
    ax = _bars_and_never(plt, counts, never, "never exercised", 0.22)
    ax.set_xlabel("times exercised (count, log scale)")
    allowed = len(lattice_transitions())
    ax.set_title(
        f"lattice-transition coverage: {allowed - len(never)} of {allowed} allowed transitions "
        f"exercised\n{what}",
        fontsize=9,
    )
    ax.tick_params(axis="y", labelsize=7)


def _roles_coverage_plot(
    plt: Any, coverage: Counter[str], universe: tuple[str, ...], what: str
) -> None:
    """The transitions the protocol's roles can take (:func:`reachable`: dispatch rules
    ``R:...`` and the lattice transitions the roles emit), as bars of how often the campaign
    took each (log scale); those it never reached greyed and marked. The lattice algebra
    allows more transitions than the roles take (``K:D->E`` is an error, ``K:L->D`` never
    happens): those are named in the page, not drawn here, so the plot's "N of M" is the
    figure the fuzz summary reports."""
    counts = [(t, coverage[t]) for t in universe if coverage.get(t)]
    never = [t for t in universe if not coverage.get(t)]
    ax = _bars_and_never(plt, counts, never, "never reached", 0.2)
    ax.set_xlabel("times taken, summed over schedules (count, log scale)")
    ax.set_title(
        f"transitions the roles can take: {len(counts)} of {len(universe)} reached\n"
        f"(R: a dispatch rule that changed a role's state; K:/C: a knowledge or curiosity "
        f"transition)\n{what}",
        fontsize=8,
    )
    ax.tick_params(axis="y", labelsize=6)


def _section(cdir: Path, target: Path, link_dir: Path, index: int) -> str:
    manifest = json.loads((cdir / "_manifest.json").read_text(encoding="utf-8"))
    config = manifest["config"]
    verdicts: Counter[str] = Counter()
    invariants: Counter[str] = Counter()
    for info in manifest["chunks"].values():
        verdicts.update(info["by_verdict"])
        invariants.update(info["by_invariant"])
    files = _plots(cdir, target, f"c{index}")
    esc = html.escape
    rows = read_rows(cdir)
    out = [f"<h2>campaign {esc(manifest['campaign_id'])}</h2>"]
    out.append(f"<p>fuzzed: {esc(_what(config, rows.num_rows))}</p>")
    out.append(
        "<p>protocol <b>{}</b>, variant <b>{}</b>, topology <b>{}</b>, seeds {}..{}, "
        "{} simulated s, fault profile {} {}</p>".format(
            esc(config["protocol"]),
            esc(config["variant"]),
            esc(config["topology"]),
            config["seed"],
            config["seed"] + config["schedules"] - 1,
            config["duration_s"],
            esc(config["fault_profile"]),
            esc(json.dumps(config["fault_rates"])),
        )
    )
    out.append("<table><tr><th>verdict</th><th>schedules</th></tr>")
    for v in ("pass", "violation", "error", "timeout"):
        out.append(f"<tr><td>{v}</td><td>{verdicts.get(v, 0)}</td></tr>")
    out.append(f"<tr><td><b>total</b></td><td>{sum(verdicts.values())}</td></tr></table>")
    if invariants:
        out.append("<table><tr><th>invariant violated</th><th>schedules</th></tr>")
        for name, n in sorted(invariants.items()):
            out.append(f"<tr><td>{esc(name)}</td><td>{n}</td></tr>")
        out.append("</table>")
    for key in ("verdicts", "latency", "nacks", "coverage"):
        out.append(f'<img src="{esc(files[key])}" alt="{key}">')
    coverage: Counter[str] = Counter()
    for text in rows.column("coverage").to_pylist():
        if text:
            coverage.update(json.loads(text))
    never = never_exercised(coverage)
    if never:
        universe = set(reachable(config["protocol"]))
        beyond = [t for t in never if universe and t not in universe]
        note = (
            f" ({len(beyond)} of these are taken by no rule of the {config['protocol']} roles,"
            " so no campaign can reach them; the roles' own transitions are counted below)"
            if beyond
            else ""
        )
        out.append(
            "<p>allowed by the lattices, never exercised by this campaign: "
            + ", ".join(f"<code>{esc(t)}</code>" for t in never)
            + note
            + "</p>"
        )
    out.append(_transitions_html(config["protocol"], rows.to_pylist(), esc))
    cxs = sorted((cdir / "_counterexamples").glob("seed-*.json"))
    if cxs:
        out.append("<h3>counterexamples</h3><ul>")
        for path in cxs:
            rel = os.path.relpath(path.resolve(), link_dir.resolve())
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                what = (
                    f"{esc(data['invariant'])}: {data['shrunk_fault_events']} fault events "
                    f"(from {data['original_fault_events']})"
                )
            except (OSError, ValueError, KeyError):
                what = "unreadable"
            out.append(
                f'<li><a href="{esc(rel)}">{esc(path.name)}</a> — {what} — '
                f"<code>gapless replay {esc(str(path))}</code></li>"
            )
        out.append("</ul>")
    return "\n".join(out)


def _transitions_html(protocol: str, rows: list[dict[str, Any]], esc: Any) -> str:
    """The per-transition coverage of a campaign (:mod:`gapless.spark_fuzz.transitions`):
    how many of the transitions the roles can take were reached, and the ones never reached."""
    cov = coverage_report(protocol, rows)
    if not cov["reachable"]:
        return ""
    never = cov["never_reached"]
    text = (
        f"<p>transitions the roles can take (rules of the dispatch table and lattice "
        f"transitions): {cov['reached']} of {cov['reachable']} reached by some schedule"
    )
    if never:
        text += "; never reached: " + ", ".join(f"<code>{esc(t)}</code>" for t in never)
    return text + "</p>"


def write_report(directory: str | Path) -> Path:
    """Write ``DIR/report/index.html`` (and its PNGs) for every campaign under ``directory``;
    returns the path of ``index.html``. Raises :class:`ReportError` if there is nothing to
    report (and writes nothing)."""
    root = Path(directory)
    if not root.is_dir():
        raise ReportError(
            f"report: {str(directory)!r} is not a directory; expected the --out directory of "
            "gapless fuzz (or one campaign_id=... directory in it)"
        )
    cdirs = _campaign_dirs(root)
    if not cdirs:
        raise ReportError(
            f"report: {str(directory)!r} holds no campaign results; expected campaign_id=... "
            "directories written by gapless fuzz"
        )
    if not os.access(root, os.W_OK):
        raise ReportError(
            f"report: {str(directory)!r} is not writable; expected a writable directory"
        )
    final = root / "report"
    staging = root / f".report-{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        sections = [_section(c, staging, final, i) for i, c in enumerate(cdirs)]
        page = (
            "<!doctype html><html><head><meta charset='utf-8'>"
            "<title>gapless campaign report</title>"
            "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}"
            "table{border-collapse:collapse;margin:0.5em 1em 0.5em 0;display:inline-table}"
            "td,th{border:1px solid #ccc;padding:2px 8px}img{max-width:100%;display:block;"
            "margin:1em 0}</style></head><body><h1>gapless campaign report</h1>\n"
            + "\n<hr>\n".join(sections)
            + "\n</body></html>\n"
        )
        (staging / "index.html").write_text(page, encoding="utf-8")
        old = root / f".report-old-{uuid.uuid4().hex}"
        if final.exists():
            final.rename(old)
        staging.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final / "index.html"
