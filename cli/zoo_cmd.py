"""``gapless zoo``: a campaign against every planted bug, and one against the correct protocol.

Exit codes: 0 every bug detected and the correct protocol passed; 1 otherwise; 2 bad input; 3 an
internal error.
"""

from __future__ import annotations

import json
from typing import Any

import click

__all__ = ["zoo"]

DEFAULT_SCHEDULES = 40
"""Schedules per campaign of the suite by default."""


@click.command()
@click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), help="Base campaign TOML."
)
@click.option(
    "--schedules",
    type=int,
    default=None,
    help=f"Schedules per campaign of the suite (default {DEFAULT_SCHEDULES}, or the config's).",
)
@click.option("--seed", type=int, help="First seed.")
@click.option("--duration", "duration_s", type=float, help="Simulated seconds per schedule.")
@click.option("--out", default=None, help="Output directory (default out/zoo).")
@click.option("--master", help="Spark master (default local[*]).")
@click.option(
    "--protocol",
    default=None,
    help="The protocol whose planted bugs to run (default gd; see `gapless protocols`).",
)
@click.option("--bug", "bugs", multiple=True, help="Only these bugs (repeatable).")
@click.option("--shrink-runs", type=int, help="Simulations one shrink may spend (default 200).")
@click.option(
    "--executor",
    type=click.Choice(["spark", "processes", "loop"]),
    default="spark",
    show_default=True,
)
@click.option("--json", "as_json", is_flag=True, help="Print the JSON list only.")
def zoo(
    config_path: str | None,
    schedules: int | None,
    seed: int | None,
    duration_s: float | None,
    out: str | None,
    master: str | None,
    protocol: str | None,
    bugs: tuple[str, ...],
    shrink_runs: int | None,
    executor: str,
    as_json: bool,
) -> None:
    """Run the same campaigns against each bug of the zoo and the correct protocol.

    Without --config the suite is GD Figure 3 and the total-order merge graph
    (gapless.spark_fuzz.zoo_campaign.DEFAULT_SUITE); a bug is detected if either finds it.
    """
    from gapless.spark_fuzz.config import CampaignConfigError
    from gapless.spark_fuzz.store import CampaignStore, OutputError
    from gapless.spark_fuzz.zoo_campaign import run_zoo, suite_configs, zoo_bugs

    overrides: dict[str, Any] = {
        "schedules": schedules
        if schedules is not None
        else (None if config_path else DEFAULT_SCHEDULES),
        "seed": seed,
        "duration_s": duration_s,
        "out": out if out is not None else (None if config_path else "out/zoo"),
        "master": master,
        "shrink_runs": shrink_runs,
        "protocol": protocol,
    }
    try:
        suite = suite_configs(overrides, config_path)
        CampaignStore.check_writable(suite[0].out)
        known = zoo_bugs(suite[0])
        for bug in bugs:
            if bug not in known:
                raise CampaignConfigError(
                    f"--bug {bug!r} is not a bug of the zoo; allowed: {', '.join(known)}"
                )
    except (CampaignConfigError, OutputError) as exc:
        click.echo(f"gapless zoo: {exc}", err=True)
        raise SystemExit(2) from None
    if not known:
        click.echo(
            f"gapless zoo: protocol {suite[0].protocol!r} declares no planted bugs", err=True
        )
        raise SystemExit(2)

    def show(entry: Any) -> None:
        if as_json:
            return
        tally = f"{entry['violations']}/{entry['schedules']} schedules violating"
        if entry["bug"] == "none":
            verdict = "FAILED (a false alarm or a real bug)" if entry["detected"] else "passed"
            click.echo(f"{'none (correct protocol)':<32} {verdict}; {tally}")
        elif entry["detected"]:
            click.echo(
                f"{entry['bug']:<32} detected after {entry['schedules_to_detect']} schedule(s) "
                f"by {entry['invariant']}; shrunk to {entry['shrunk_fault_events']} fault "
                f"event(s); {tally}"
            )
        else:
            click.echo(f"{entry['bug']:<32} NOT detected; {tally}")

    results = run_zoo(suite, bugs=list(bugs) or None, executor=executor, on_result=show)
    if as_json:
        click.echo(json.dumps(results, indent=2))
    ok = all(r["detected"] for r in results if r["bug"] != "none") and not any(
        r["detected"] for r in results if r["bug"] == "none"
    )
    raise SystemExit(0 if ok else 1)
