"""``gapless bench dft``: the δ-fault-tolerant protocol's §IX evaluation, Figures 9-12
[DFT §IX], with its plots.

* ``fig9`` — the Figure 9 sweep (:func:`gapless.models.dft_figures.fig9`): 1000 brokers,
  fanout 3 and 7, δ = 0..3, k in {10, 20, 50, 100, 170}, 100 runs per point, 1000 sampled
  live pairs per run; per ``f{fanout}_d{delta}_k{k}`` the paper's chain count
  ``disconnected_pct`` and the protocol's own rule ``disconnected_pct_legitimate``;
  ``fig9_wall_s`` (target <= 60 s).
* ``fig11`` / ``fig12`` — percentiles of the Δ-neighbourhood sizes (δ = 0..3) and of the
  active sessions after 16 and 60 failures (δ = 3, 10 failure sets each), fanout 3 and 7.
* ``fig10`` — the Figure 10 sweep with the roles on the simulator, invariants on
  (:func:`gapless.models.dft_fig10.fig10_delta`: the points of one δ share their start-up,
  each the same run as :func:`~gapless.models.dft_fig10.fig10_point`), **scaled down** to
  fit two shared cores: 100 brokers (not 500), 10 simulated seconds (not 120), k in
  {0, 4, 8, 12, 17} (the paper's 0, 20, 40, 60, 85 as fractions of 500: up to 17% failed),
  δ = 0..3, one run per point, one task per δ spread over 2 worker processes.
  ``delivered_fraction`` per ``d{delta}_k{k}``; ``fig10_wall_s``, ``fig10_events`` (the
  events simulated, a shared start-up counted once), ``fig10_events_per_s`` (per wall
  second of one worker) and ``fig10_events_per_cpu_s``; with ``--param only=fig10`` each
  point also gives its ``events``, ``wall_s``, ``cpu_s`` and ``python_ns_per_iteration``
  (measured in its worker). ``bytes_per_broker``: the deep size of
  the broker states at the end of the 100-broker, k = 0, δ = 3 run (the primary tree, which
  every broker shares, counted once and divided out) — the 500-broker run does not fit.
* ``--param``: ``fig10=paper`` runs the paper's sweep instead (500 brokers, 120 s, k in
  {0, 20, 40, 60, 85}, δ = 0..3), ``n``/``duration``/``ks``/``deltas`` any other shape,
  ``workers`` the processes it is spread over, ``only=fig10`` skips Figures 9, 11, 12 and
  ``memory=1`` adds ``bytes_per_broker`` of the sweep's own network (e.g. 500 brokers);
  ``store=DIR`` keeps every finished point in DIR and a later run resumes from them (the
  default for ``fig10=paper``: ``build/bench-dft/fig10-paper``), so the paper's sweep,
  hours of CPU, can span sessions.
* ``plots`` — the PNG files written (``build/bench-dft/fig9.png``, ``fig10.png``,
  ``fig11.png``, ``fig12.png``).

Every result carries ``python_ns_per_iteration`` (added by ``gapless bench``) and
``targets``.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Final

from gapless.benchmarks._targets import machine_speed, target
from gapless.models import dft_figures as F
from gapless.models.dft_fig10 import FAIL_AT_US, fig10_delta, fig10_spec, legitimate_of_point
from gapless.models.faults import FaultSchedule
from gapless.models.run import Run

__all__ = ["plot_figure_scenario", "run"]

PLOT_DIR: Final = Path("build/bench-dft")
FIG10_N: Final = 100
FIG10_DURATION_S: Final = 10.0
FIG10_KS: Final = (0, 4, 8, 12, 17)
FIG10_DELTAS: Final = (0, 1, 2, 3)


TAKES_PARAMS: Final = True
"""``gapless bench dft --param KEY=VALUE``: ``fig10`` (``scaled``, the default, or ``paper``:
500 brokers, 120 s, k in {0, 20, 40, 60, 85}, δ = 0..3 [DFT §IX-B]); ``n``, ``duration``,
``ks`` and ``deltas`` (comma-separated) override the sweep's shape; ``workers`` (processes,
default 2); ``only=fig10`` skips Figures 9, 11 and 12; ``store=DIR`` keeps each Figure 10
point in DIR as it finishes and resumes from those already there (``fig10=paper`` stores in
``build/bench-dft/fig10-paper`` unless told otherwise; ``store=none`` stores nothing)."""

PAPER_FIG10: Final = {
    "n": 500,
    "duration": 120.0,
    "ks": (0, 20, 40, 60, 85),
    "deltas": (0, 1, 2, 3),
}
SCALED_FIG10: Final = {
    "n": FIG10_N,
    "duration": FIG10_DURATION_S,
    "ks": FIG10_KS,
    "deltas": FIG10_DELTAS,
}


def _delta_points(
    args: tuple[int, int, tuple[int, ...], float, Path | None],
) -> list[dict[str, Any]]:
    """The points of one δ (:func:`gapless.models.dft_fig10.fig10_delta`: one shared
    start-up), each written to ``store`` as it finishes."""
    n, delta, ks, duration, store = args
    speed = machine_speed()
    points = []
    for p in fig10_delta(n, delta, ks, duration):
        point = {**p, **speed}
        path = _stored(store, (n, delta, p["k"], duration))
        if path is not None:
            path.write_text(json.dumps(point, indent=1, sort_keys=True))
        points.append(point)
    return points


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def fig10_shape(params: dict[str, str]) -> dict[str, Any]:
    """The Figure 10 sweep ``params`` ask for (see :data:`TAKES_PARAMS`); ValueError names
    a bad one."""
    kind = params.get("fig10", "scaled")
    if kind not in ("scaled", "paper"):
        raise ValueError(f"--param fig10={kind!r} is not allowed; allowed: scaled, paper")
    shape = dict(PAPER_FIG10 if kind == "paper" else SCALED_FIG10)
    if "n" in params:
        shape["n"] = int(params["n"])
    if "duration" in params:
        shape["duration"] = float(params["duration"])
    if "ks" in params:
        shape["ks"] = _ints(params["ks"])
    if "deltas" in params:
        shape["deltas"] = _ints(params["deltas"])
    if shape["n"] not in (100, 500):
        raise ValueError(f"n={shape['n']} is not allowed; allowed: 100, 500 (dft-fig10-N)")
    if max(shape["ks"], default=0) >= shape["n"] - 10:
        raise ValueError(f"ks={shape['ks']} leave too few brokers for n={shape['n']}")
    return shape


def _jobs(sh: dict[str, Any]) -> list[tuple[int, int, int, float]]:
    """The sweep's points, the most failures first (k = 0 last: no failure, nothing to
    bypass), then δ from high to low: an interrupted sweep has its most telling points."""
    pts = [(sh["n"], d, k, sh["duration"]) for d in sh["deltas"] for k in sh["ks"]]
    return sorted(pts, key=lambda p: (-p[2], -p[1]))


def _stored(store: Path | None, job: tuple[int, int, int, float]) -> Path | None:
    n, delta, k, duration = job
    return None if store is None else store / f"n{n}_{duration:g}s_d{delta}_k{k}.json"


def _with_legitimate(point: dict[str, Any], job: tuple[int, int, int, float]) -> dict[str, Any]:
    """A stored point that ran before the bench reported ``legitimate`` gets it from the
    workload, tree and failures alone (:func:`legitimate_of_point`, marked
    ``legitimate_offline``); its ``expected`` must come out the same, or the stored point is
    of another setup and the sweep stops with a ValueError naming the file's point."""
    if point.get("legitimate") is not None:
        return point
    n, delta, k, duration = job
    counts = legitimate_of_point(n, delta, k, duration)
    if counts["expected"] != point["expected"]:
        raise ValueError(
            f"stored Figure 10 point n={n} δ={delta} k={k} {duration:g}s expects "
            f"{point['expected']} deliveries, this code's setup {counts['expected']}: "
            "it is of another setup; move it out of the store"
        )
    legit = counts["legitimate"]
    return {
        **point,
        "legitimate": legit,
        "legitimate_fraction": round(legit / point["expected"], 4) if point["expected"] else None,
        "legitimate_offline": True,
    }


def _fig10(
    workers: int = 2, shape: dict[str, Any] | None = None, store: Path | None = None
) -> dict[str, Any]:
    """The sweep, one task per δ (its points share their start-up); with ``store``, each
    point is written there as it finishes (``n{n}_{duration}s_d{delta}_k{k}.json``) and a
    point already there is read, not run again: a sweep longer than a session resumes where
    it stopped."""
    sh = shape or SCALED_FIG10
    points: list[dict[str, Any]] = []
    todo: dict[int, list[int]] = {}
    for job in _jobs(sh):
        path = _stored(store, job)
        if path is not None and path.exists():
            points.append(_with_legitimate({**json.loads(path.read_text()), "resumed": True}, job))
        else:
            todo.setdefault(job[1], []).append(job[2])
    if store is not None:
        store.mkdir(parents=True, exist_ok=True)
    tasks = [(sh["n"], d, tuple(ks), sh["duration"], store) for d, ks in todo.items()]
    t0 = time.perf_counter()
    c0 = time.process_time()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for got in pool.map(_delta_points, tasks):
            points += got
    wall = time.perf_counter() - t0
    ran = [p for p in points if not p.get("resumed")]
    shared = {(p["delta"], p["shared_events"], p["shared_cpu_s"], p["shared_wall_s"]) for p in ran}
    events = sum(p["events"] - p["shared_events"] for p in ran) + sum(e for _, e, _, _ in shared)
    busy = sum(p["wall_s"] for p in ran) + sum(w for _, _, _, w in shared)
    cpu = sum(p["cpu_s"] for p in ran) + sum(c for _, _, c, _ in shared)
    points.sort(key=lambda p: (p["delta"], p["k"]))
    return {
        "n": sh["n"],
        "duration_s": sh["duration"],
        "ks": list(sh["ks"]),
        "deltas": list(sh["deltas"]),
        "workers": workers,
        "parent_cpu_s": round(time.process_time() - c0, 1),
        "points": {f"d{p['delta']}_k{p['k']}": p for p in points},
        "fig10_wall_s": round(wall, 1),
        "fig10_events": events,
        "fig10_events_per_s": round(events / busy) if busy else None,
        "fig10_events_per_cpu_s": round(events / cpu) if cpu else None,
        "fig10_resumed": len(points) - len(ran),
        "fig10_delivered_equals_legitimate": sum(
            1 for p in points if p.get("delivered") == p.get("legitimate")
        ),
    }


def _deep_size(obj: Any, seen: set[int]) -> int:
    """Bytes reachable from ``obj`` not already in ``seen`` (attrs slots, containers)."""
    total = 0
    stack = [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, type):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, list | tuple | set | frozenset):
            stack.extend(o)
        elif hasattr(o, "__slots__"):
            stack.extend(getattr(o, s) for s in o.__slots__ if hasattr(o, s))
        elif hasattr(o, "__dict__"):
            stack.append(vars(o))
        elif hasattr(o, "__iter__") and not isinstance(o, str | bytes):
            with contextlib.suppress(TypeError):
                stack.extend(o.items() if hasattr(o, "items") else o)
    return total


def _bytes_per_broker(n: int = FIG10_N) -> int:
    spec = fig10_spec(n, 3, 1.0 if n > FIG10_N else 2.0)
    run = Run(spec, FaultSchedule(seed=0, events=()), 0)
    run.world.run(duration_us=spec.duration_us, drain_us=FAIL_AT_US)
    states = [node.state for node in run.world.nodes.values()]
    seen: set[int] = set()
    _deep_size(states[0].tree, seen)  # shared by every broker: not per broker
    return sum(_deep_size(s, seen) for s in states) // len(states)


def _plot_fig9(fig9: dict[str, Any], path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.5))
    axes = fig.subplots(1, 2, sharey=True)
    pts = fig9["points"]
    for ax, f in zip(axes, (3, 7), strict=True):
        for d, colour in zip(F.FIG9_DELTAS, ("C0", "C1", "C2", "C3"), strict=True):
            ks = list(F.FIG9_KS)
            chain = [pts[f"f{f}_d{d}_k{k}"]["disconnected_pct"] for k in ks]
            legit = [pts[f"f{f}_d{d}_k{k}"]["disconnected_pct_legitimate"] for k in ks]
            if chain == legit:  # one curve, said so (δ = 0: the two rules are one)
                ax.plot(ks, chain, "o-", color=colour, label=f"δ={d} both counts (coincide)")
                continue
            ax.plot(ks, chain, "o-", color=colour, label=f"δ={d} chain of δ+1 (paper)")
            ax.plot(ks, legit, "x--", color=colour, label=f"δ={d} legitimate propagation")
        ax.set_title(f"fanout {f}, 1000 brokers, {fig9['runs']} runs/point")
        ax.set_xlabel("failed brokers k")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("% live broker pairs disconnected")
    axes[1].legend(fontsize=7)
    fig.suptitle("DFT Figure 9: connectivity after k random broker failures")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def _plot_cdfs(
    data: dict[str, Any], keys: list[list[tuple[str, str]]], title: str, path: Path
) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.5))
    axes = fig.subplots(1, 2)
    for ax, series, f in zip(axes, keys, (3, 7), strict=True):
        for key, label in series:
            xs, ys = F.cdf(data[key]["values"])
            ax.step(xs, ys, where="post", label=label)
        ax.set_xscale("log")
        ax.set_title(f"fanout {f}, 1000 brokers")
        ax.set_ylabel("fraction of brokers (CDF)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_xlabel(title.split(": ")[1])
    axes[1].set_xlabel(title.split(": ")[1])
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def _plot_fig10(fig10: dict[str, Any], path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.5))
    ax = fig.subplots()
    drawn: list[tuple[list[float], list[int]]] = []
    for d in fig10["deltas"]:
        ys = [100 * (fig10["points"][f"d{d}_k{k}"]["delivered_fraction"] or 0) for k in fig10["ks"]]
        same = next((names for prev, names in drawn if prev == ys), None)
        if same is not None:  # coinciding series: one curve, every member in its label
            same.append(d)
            continue
        drawn.append((ys, [d]))
    styles = list(zip(drawn, "osx^", strict=False))
    for (ys, names), marker in reversed(styles):  # the lower δ on top where curves touch
        label = " = ".join(f"δ={d}" for d in names) + (" (coincide)" if len(names) > 1 else "")
        ax.plot(fig10["ks"], ys, marker + "-", label=label, markersize=8 if marker == "^" else 6)
    handles, labels = ax.get_legend_handles_labels()
    ax.set_xlabel(f"failed brokers k (of {fig10['n']})")
    ax.set_ylabel("% of expected deliveries made")
    scale = "the paper's scale" if (fig10["n"], fig10["duration_s"]) == (500, 120.0) else "scaled"
    exact = fig10["fig10_delivered_equals_legitimate"] == len(fig10["points"])
    ax.set_title(
        f"DFT Figure 10 ({scale}): {fig10['n']} brokers, {fig10['duration_s']:g} s, "
        "10 publishers × 2/s"
        + ("\nevery point: deliveries = what legitimate propagation allows" if exact else ""),
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    ax.legend(handles[::-1], labels[::-1], loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def plot_figure_scenario(m: dict[str, Any], path: Path) -> None:
    """``gapless simulate --scenario dft-fig9|dft-fig11|dft-fig12 --plot FILE``: the bench's
    plot of that figure, from the scenario's figures (Figures 11 and 12 recompute their
    per-broker values with the same functions and sizes)."""
    name = m["scenario"]
    if name == "dft-fig9":
        points = {k: v for k, v in m.items() if k.startswith("f") and "_k" in k}
        _plot_fig9({"points": points, "runs": m["runs"]}, path)
    elif name == "dft-fig11":
        _plot_cdfs(
            F.fig11(n=m["brokers"]),
            [[(f"f{f}_d{d}", f"δ={d}") for d in F.FIG9_DELTAS] for f in (3, 7)],
            "DFT Figure 11: Δ-neighbourhood size",
            path,
        )
    else:
        _plot_cdfs(
            F.fig12(n=m["brokers"], runs=m["runs"]),
            [[(f"f{f}_k{k}", f"{k} failures, δ=3") for k in (16, 60)] for f in (3, 7)],
            "DFT Figure 12: active sessions per live broker",
            path,
        )


def _store(params: dict[str, str]) -> Path | None:
    """Where the Figure 10 points are kept (see :data:`TAKES_PARAMS`)."""
    default = str(PLOT_DIR / "fig10-paper") if params.get("fig10") == "paper" else "none"
    where = params.get("store", default)
    return None if where == "none" else Path(where)


_POINT_FIELDS: Final = (
    "delivered_fraction",
    "delivered",
    "expected",
    "legitimate",
    "legitimate_fraction",
    "legitimate_offline",
    "verdict",
    "invariant",
    "events",
    "wall_s",
    "cpu_s",
    "python_ns_per_iteration",
)


def _fig10_only(params: dict[str, str]) -> dict[str, Any]:
    """Just the Figure 10 sweep ``params`` ask for, with its figures and ``bytes_per_broker``
    of its network (k = 0, δ = 3, 1 simulated second)."""
    shape = fig10_shape(params)
    fig10 = _fig10(int(params.get("workers", "2")), shape, _store(params))
    PLOT_DIR.mkdir(parents=True, exist_ok=True)
    plot = PLOT_DIR / f"fig10-n{shape['n']}-{shape['duration']:g}s.png"
    _plot_fig10(fig10, plot)
    return {
        "fig10": {k: {f: p.get(f) for f in _POINT_FIELDS} for k, p in fig10["points"].items()},
        "fig10_setup": f"{fig10['n']} brokers, fanout 3, {fig10['duration_s']:g} s, "
        f"k in {fig10['ks']}, δ in {fig10['deltas']}, 10 publishers x 2/s, a match-all "
        f"subscriber per broker, one run per point, {fig10['workers']} worker processes",
        "fig10_wall_s": fig10["fig10_wall_s"],
        "fig10_events": fig10["fig10_events"],
        "fig10_events_per_s": fig10["fig10_events_per_s"],
        "fig10_events_per_cpu_s": fig10["fig10_events_per_cpu_s"],
        "fig10_resumed": fig10["fig10_resumed"],
        "fig10_delivered_equals_legitimate": fig10["fig10_delivered_equals_legitimate"],
        "bytes_per_broker": _bytes_per_broker(shape["n"]) if params.get("memory") else None,
        "plots": {"fig10": str(plot)},
        "targets": {},
    }


def run(**params: str) -> dict[str, Any]:
    """Figures 9-12 and their plots (see module doc); ``params``: see :data:`TAKES_PARAMS`."""
    unknown = sorted(
        set(params)
        - {"fig10", "n", "duration", "ks", "deltas", "workers", "only", "memory", "store"}
    )
    if unknown:
        raise ValueError(
            f"unknown --param {unknown}; allowed: fig10, n, duration, ks, deltas, workers, "
            "only, memory, store"
        )
    if params.get("only") == "fig10":
        return _fig10_only(params)
    t0 = time.perf_counter()
    fig9 = F.fig9()
    fig9_wall = time.perf_counter() - t0
    fig11 = F.fig11()
    fig12 = F.fig12()
    fig10 = _fig10(int(params.get("workers", "2")), fig10_shape(params), _store(params))
    per_broker = _bytes_per_broker()
    PLOT_DIR.mkdir(parents=True, exist_ok=True)
    plots = {name: str(PLOT_DIR / f"{name}.png") for name in ("fig9", "fig10", "fig11", "fig12")}
    _plot_fig9(fig9, Path(plots["fig9"]))
    _plot_fig10(fig10, Path(plots["fig10"]))
    _plot_cdfs(
        fig11,
        [[(f"f{f}_d{d}", f"δ={d}") for d in F.FIG9_DELTAS] for f in (3, 7)],
        "DFT Figure 11: Δ-neighbourhood size",
        Path(plots["fig11"]),
    )
    _plot_cdfs(
        fig12,
        [[(f"f{f}_k{k}", f"{k} failures, δ=3") for k in (16, 60)] for f in (3, 7)],
        "DFT Figure 12: active sessions per live broker",
        Path(plots["fig12"]),
    )
    strip = {k: {p: v for p, v in d.items() if p != "values"} for k, d in fig11.items()}
    strip12 = {k: {p: v for p, v in d.items() if p != "values"} for k, d in fig12.items()}
    return {
        "fig9": fig9["points"],
        "fig9_runs": fig9["runs"],
        "fig9_pairs_per_run": fig9["pairs_per_run"],
        "fig9_wall_s": round(fig9_wall, 1),
        "fig11": strip,
        "fig12": strip12,
        "fig10": {k: {f: p.get(f) for f in _POINT_FIELDS} for k, p in fig10["points"].items()},
        "fig10_setup": f"{fig10['n']} brokers, fanout 3, {fig10['duration_s']:g} s, "
        "10 publishers x 2/s, a match-all subscriber per broker, one run per point",
        "fig10_wall_s": fig10["fig10_wall_s"],
        "fig10_events": fig10["fig10_events"],
        "fig10_events_per_s": fig10["fig10_events_per_s"],
        "fig10_delivered_equals_legitimate": fig10["fig10_delivered_equals_legitimate"],
        "bytes_per_broker": per_broker,
        "plots": plots,
        "targets": {"fig9_wall_s": target(round(fig9_wall, 1), 60, at_least=False)},
    }
