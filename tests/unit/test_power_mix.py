"""A campaign's ``mix``: a share of the schedules on other setups the protocol has (issue 18
§2: the demo covers the code the protocol runs — the total-order merge topology and the
best-effort roles beside Figure 3), drawn per schedule from the campaign seed; and the
``rich`` filter profile (booleans, decimals, comparisons across types, signed numbers, numbers
written from their point, attribute names with digits)."""

from __future__ import annotations

import collections
import re
from pathlib import Path

import attrs
import pytest

from gapless.impl.filters import parse_filter
from gapless.models.topology import fig3
from gapless.models.workload import RICH_FILTERS, WorkloadSpec, generate_workload
from gapless.spark_fuzz.config import (
    CampaignConfigError,
    canonical_json,
    config_for_seed,
    load_config,
    setup_of_seed,
)
from gapless.spark_fuzz.execute import run_seed
from gapless.spec.filters import reference_matcher

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "campaigns" / "demo.toml"


def test_each_seed_draws_its_setup_from_the_campaign_seed_alone() -> None:
    demo = load_config(DEMO)
    drawn = [setup_of_seed(demo, s) for s in demo.seeds()]
    counts = collections.Counter(drawn)
    # the shares of the file (0.15 and 0.10 of 300), within sampling noise
    assert 25 <= counts["total-order"] <= 65
    assert 12 <= counts["best-effort"] <= 45
    assert counts[""] >= 180
    # the draw does not depend on the schedule count (a longer campaign extends a shorter one)
    short = load_config(DEMO, {"schedules": 20})
    assert [setup_of_seed(short, s) for s in short.seeds()] == drawn[:20]
    # nor on anything but the campaign seed and the schedule's seed
    other = load_config(DEMO, {"seed": 7})
    assert [setup_of_seed(other, s) for s in range(1, 301)] != drawn


def test_a_drawn_setup_runs_under_its_own_keys_in_the_campaign() -> None:
    demo = load_config(DEMO)
    by_setup = {setup_of_seed(demo, s): s for s in demo.seeds()}
    base = config_for_seed(demo, by_setup[""])
    assert base is demo
    total = config_for_seed(demo, by_setup["total-order"])
    assert total.topology == "total-order"
    assert total.mix == {}
    assert total.campaign_id == demo.campaign_id
    best = config_for_seed(demo, by_setup["best-effort"])
    assert best.run_config == {"best_effort": True}
    assert "exactly_once" not in best.invariants
    assert "safety" in best.invariants
    assert best.topology == "fig3"
    assert "sideways_one_hop" in best.invariants
    assert best.fault_rates == demo.fault_rates  # every fault kind since the sideways fix
    assert total.fault_rates == demo.fault_rates
    assert best.workload == demo.workload


def test_a_mix_setup_may_replace_the_campaigns_fault_rates(tmp_path: Path) -> None:
    toml = tmp_path / "calm.toml"
    toml.write_text(
        DEMO.read_text() + "\n[mix.calm]\nshare = 0.2\nfault_rates = { crash = 0.5, drop = 0.1 }\n"
    )
    config = load_config(toml)
    calm = next(s for s in config.seeds() if setup_of_seed(config, s) == "calm")
    assert config_for_seed(config, calm).fault_rates == {"crash": 0.5, "drop": 0.1}
    gd = next(s for s in config.seeds() if setup_of_seed(config, s) == "")
    assert config_for_seed(config, gd).fault_rates == config.fault_rates


def test_a_mix_seed_runs_its_setup_not_the_campaigns_own() -> None:
    demo = load_config(DEMO, {"duration_s": 2.0})
    seed = next(s for s in demo.seeds() if setup_of_seed(demo, s) == "best-effort")
    mixed = run_seed(canonical_json(demo.to_data()), seed).row
    alone = run_seed(canonical_json(config_for_seed(demo, seed).to_data()), seed).row
    plain = attrs.evolve(demo, mix={})  # the campaign's own setup for every seed
    # the row is that of the best-effort setup (same trace), under the campaign's id
    assert mixed["trace_digest"] == alone["trace_digest"]
    assert mixed["verdict"] == "pass"
    assert mixed["campaign_id"] == demo.campaign_id
    fig3_run = run_seed(canonical_json(plain.to_data()), seed).row
    assert fig3_run["trace_digest"] != mixed["trace_digest"]
    # best-effort roles never nack or retransmit (GD §4.1): the setup really ran them
    assert mixed["nacks"] == 0
    assert mixed["retransmissions"] == 0


@pytest.mark.parametrize(
    ("mix", "says"),
    [
        ({"a": {"share": 1.5}}, "mix.a.share"),
        ({"a": {"share": 0.6}, "b": {"share": 0.6}}, "sum to <= 1"),
        ({"a": {"share": 0.1, "colour": "red"}}, "unknown key 'mix.a.colour'"),
        ({"a": {"share": 0.1, "topology": "nowhere"}}, "mix.a"),
        ({"a": {"share": 0.1, "invariants": ["no_such"]}}, "mix.a"),
        ({"a": {"share": 0.1, "run_config": {"x": [1]}}}, "mix.a.run_config.x"),
        ({"a": "half"}, "mix.a"),
        ({"a": {"share": 0.1, "fault_rates": {"crash": -1}}}, "mix.a.fault_rates.crash"),
        ({"a": {"share": 0.1, "fault_rates": {"meteor": 1.0}}}, "meteor"),
    ],
)
def test_a_mix_that_is_not_allowed_is_refused_by_name(mix: object, says: str) -> None:
    with pytest.raises(CampaignConfigError, match=says.replace(".", r"\.")):
        load_config(None, {"mix": mix})


def test_mix_and_guided_together_are_refused() -> None:
    with pytest.raises(CampaignConfigError, match="guided"):
        load_config(None, {"mix": {"a": {"share": 0.1}}, "guided": True})


def test_the_rich_profile_judges_every_kind_of_comparison() -> None:
    spec = WorkloadSpec(filters="rich", subscribers_per_shb=2)
    wl = generate_workload(spec, fig3(), duration_us=5_000_000, seed=1)
    assert all(isinstance(e.attributes["hot"], bool) for e in wl.publishes)
    assert {s.filter for s in wl.subscriptions} == set(RICH_FILTERS)
    ref = reference_matcher()
    for text in RICH_FILTERS:
        got = [ref(text, e.attributes) for e in wl.publishes]
        impl = parse_filter(text)
        assert got == [impl.matches(e.attributes) for e in wl.publishes], text
        if text != "true":  # each content filter keeps some messages and drops others
            assert any(got)
            assert not all(got), text
    # a comparison across types is unequal: true under !=, false under == and <
    hot = [e.attributes for e in wl.publishes]
    assert all(ref('p != "3"', a) and not ref('p == "3"', a) and not ref("loc < 5", a) for a in hot)


def test_the_other_profiles_draw_what_they_always_drew() -> None:
    for profile in ("all", "mixed", "keys"):
        wl = generate_workload(WorkloadSpec(filters=profile), fig3(), duration_us=2_000_000, seed=3)
        assert all("hot" not in e.attributes for e in wl.publishes)
    mixed = generate_workload(WorkloadSpec(filters="mixed"), fig3(), duration_us=2_000_000, seed=3)
    rich = generate_workload(WorkloadSpec(filters="rich"), fig3(), duration_us=2_000_000, seed=3)
    # same first message of each pubend (the extra draw comes after the others)
    firsts = {e.pubend: e for e in reversed(mixed.publishes)}
    rich_firsts = {e.pubend: e for e in reversed(rich.publishes)}
    for p, e in firsts.items():
        assert rich_firsts[p].at_us == e.at_us
        extra = {k: rich_firsts[p].attributes[k] for k in ("hot", "delta", "p99")}
        assert dict(rich_firsts[p].attributes) == {**dict(e.attributes), **extra}


#: The literals the filter tokenizer reads by its own branches (outside quotes): a signed
#: number, a number written from its point, a name with a digit after its first character.
_SIGNED: re.Pattern[str] = re.compile(r"(?<![\w.\"'])[-+]\d")
_POINT: re.Pattern[str] = re.compile(r"(?<![\w.\"'])\.\d")
_DIGIT_NAME: re.Pattern[str] = re.compile(r"(?<![\w.\"'])[A-Za-z_]\w*\d")


def test_the_demo_subscribes_with_signed_and_point_numbers_and_digit_names() -> None:
    """The demo's own subscriptions (Figure 3, one subscriber per SHB: the first five filters
    of the rotation) use every literal form the tokenizer has a branch for: power6's two
    tokenizer mutants (signed and leading-point numbers, digit-bearing names) were missed
    because no filter of the demo reached them (issue 18)."""
    demo = load_config(DEMO)
    wl_keys = {k: v for k, v in demo.workload.items() if k in ("filters", "subscribers_per_shb")}
    spec = WorkloadSpec(**wl_keys)
    wl = generate_workload(spec, fig3(), duration_us=5_000_000, seed=demo.seed)
    texts = [s.filter for s in wl.subscriptions]
    assert len(texts) == 5
    joined = " ".join(texts)
    assert {m.group()[0] for m in _SIGNED.finditer(joined)} == {"-", "+"}
    assert _POINT.search(joined)
    assert _DIGIT_NAME.search(joined)
    # and the comparisons on the new attributes split the messages both ways
    ref = reference_matcher()
    for atom in ("delta <= -4", "delta < +3", "delta > -2", "p99 < .8", "p99 >= 0.9"):
        assert atom in joined
        got = [ref(atom, e.attributes) for e in wl.publishes]
        assert any(got), atom
        assert not all(got), atom
        assert got == [parse_filter(atom).matches(e.attributes) for e in wl.publishes], atom
