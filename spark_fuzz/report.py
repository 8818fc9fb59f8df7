"""``gapless report``: a static HTML report of the campaigns under an output directory.

For each campaign: the summary by verdict and invariant, and four PNG plots drawn with
matplotlib (Agg backend) in the spirit of the papers' own figures [GD §4.2, Figures 6–8]:

1. verdicts by fault kind (stacked bars; a schedule counts once per kind it holds);
2. the latency distribution (per-schedule p50 and p99, virtual milliseconds);
3. nacks against faults (per schedule: fault events vs nacks sent);
4. lattice-transition coverage (how often each knowledge and curiosity transition was
   exercised across the campaign, e.g. ``K:Q->D``, ``C:N->C`` [GD §2.1, §2.4]).

Counterexamples are linked (relative links), with the command that replays each one.
The report goes to ``DIR/report/`` (``index.html`` plus PNGs), replaced atomically.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import uuid
from collections import Counter
from pathlib import Path

from gapless.impl.errors import GaplessError
from gapless.spark_fuzz.store import iter_campaign_dirs, read_faults, read_rows

__all__ = ["ReportError", "write_report"]

VERDICT_COLOURS = {"pass": "#4c9f70", "violation": "#d1495b", "error": "#edae49", "timeout": "#66a"}


class ReportError(GaplessError, ValueError):
    """A directory that holds no campaign results (message names it and what is expected)."""


def _campaign_dirs(directory: Path) -> list[Path]:
    if directory.name.startswith("campaign_id=") and (directory / "_manifest.json").exists():
        return [directory]
    return [d for d in iter_campaign_dirs(directory) if (d / "_manifest.json").exists()]


def _plots(cdir: Path, target: Path, prefix: str) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    manifest = json.loads((cdir / "_manifest.json").read_text(encoding="utf-8"))
    rows = read_rows(cdir).to_pylist()
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
    ax.set_ylabel("schedules")
    ax.set_title("verdicts by fault kind")
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
    ax.set_xlabel("latency per schedule (virtual ms)")
    ax.set_ylabel("schedules")
    ax.set_title("latency distribution")
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
    ax.set_xlabel("fault events in the schedule")
    ax.set_ylabel("nacks sent")
    ax.set_title("nacks against faults")
    if rows:
        ax.legend(fontsize=8)
    fig.tight_layout()
    files["nacks"] = f"{prefix}-nacks.png"
    fig.savefig(target / files["nacks"], dpi=90)
    plt.close(fig)

    coverage: Counter[str] = Counter()
    for r in rows:
        if r["coverage"]:
            coverage.update(json.loads(r["coverage"]))
    labels = sorted(coverage)
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.22 * len(labels) + 1)))
    if labels:
        ax.barh(labels, [coverage[label] for label in labels], color="#30638e")
        ax.set_xscale("log")
        ax.invert_yaxis()
    ax.set_xlabel("times exercised (log scale)")
    ax.set_title(f"lattice-transition coverage ({len(labels)} transitions)")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    files["coverage"] = f"{prefix}-coverage.png"
    fig.savefig(target / files["coverage"], dpi=90)
    plt.close(fig)
    return files


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
    out = [f"<h2>campaign {esc(manifest['campaign_id'])}</h2>"]
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
