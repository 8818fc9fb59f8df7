"""Campaign configuration: flags override the file, the id is a digest, bad input is named."""

from __future__ import annotations

from pathlib import Path

import pytest
from spark_helpers import FAKE

from gapless.spark_fuzz.config import CampaignConfigError, load_config

pytestmark = pytest.mark.usefixtures("fake_path")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_flags_override_the_file(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        f'backend = "{FAKE}"\nschedules = 10\nseed = 3\nvariant = "buggy"\n'
        '[workload]\nmessages = 20\n[faults]\nprofile = "swarm"\n[faults.rates]\ncrash = 0.5\n',
    )
    config = load_config(path, {"schedules": 99, "seed": None})
    assert config.schedules == 99
    assert config.seed == 3
    assert config.variant == "buggy"
    assert config.workload == {"messages": 20}
    assert config.fault_profile == "swarm"
    assert config.fault_rates == {"crash": 0.5}
    assert config.seeds() == range(3, 102)


def test_campaign_id_is_a_digest_of_the_identity(tmp_path: Path) -> None:
    a = load_config(None, {"backend": FAKE, "schedules": 10})
    b = load_config(None, {"backend": FAKE, "schedules": 20, "out": str(tmp_path)})
    c = load_config(None, {"backend": FAKE, "schedules": 10, "variant": "buggy"})
    assert a.campaign_id == b.campaign_id  # more schedules extend the same campaign
    assert a.campaign_id != c.campaign_id
    assert a.campaign_id.startswith("c-")
    assert len(a.campaign_id) == 14
    assert load_config(None, {"backend": FAKE, "id": "mine"}).campaign_id == "mine"


@pytest.mark.parametrize(
    ("overrides", "fragments"),
    [
        ({"schedules": 0}, ["'schedules'", "0", "integer >= 1"]),
        ({"schedules": "many"}, ["'schedules'", "'many'"]),
        ({"seed": -1}, ["'seed'", "-1", ">= 0"]),
        ({"duration_s": 0}, ["'duration_s'", "> 0"]),
        ({"master": "yarn"}, ["'master'", "'yarn'", "spark://HOST:PORT"]),
        ({"id": "bad id!"}, ["'id'", "'bad id!'", "letters"]),
        ({"variant": "nope"}, ["'variant'", "'nope'", "none, buggy"]),
        ({"topology": "ring"}, ["'topology'", "'ring'", "fig3"]),
        ({"faults": {"profile": "chaos"}}, ["faults.profile", "'chaos'", "swarm"]),
        ({"faults": {"rates": {"meteor": 1.0}}}, ["meteor", "crash, drop, delay"]),
        ({"faults": {"rates": {"crash": -1}}}, ["faults.rates.crash", "-1", ">= 0"]),
        ({"workload": {"colour": 1}}, ["workload.colour", "messages"]),
        ({"workload": {"messages": -3}}, ["workload.messages", "-3"]),
        ({"invariants": ["sanity"]}, ["'invariants'", "'sanity'", "gapless"]),
    ],
)
def test_bad_values_are_named_with_what_is_allowed(
    overrides: dict[str, object], fragments: list[str]
) -> None:
    with pytest.raises(CampaignConfigError) as info:
        load_config(None, {"backend": FAKE, **overrides})
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


def test_unknown_protocol_and_keys(tmp_path: Path) -> None:
    with pytest.raises(CampaignConfigError, match=r"'protocol' = 'no-such-protocol'.*gd"):
        load_config(None, {"protocol": "no-such-protocol"})
    with pytest.raises(CampaignConfigError, match=r"unknown key 'shedules'.*schedules"):
        load_config(_write(tmp_path, "shedules = 3\n"))
    with pytest.raises(CampaignConfigError, match=r"not valid TOML"):
        load_config(_write(tmp_path, "schedules = = 3\n"))
    with pytest.raises(CampaignConfigError, match=r"cannot be read"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(CampaignConfigError, match=r"'backend'.*cannot import"):
        load_config(None, {"backend": "no_such_module:Backend"})


def test_the_demo_campaign_file_is_valid() -> None:
    demo = Path(__file__).resolve().parents[2] / "campaigns" / "demo.toml"
    config = load_config(demo)
    assert config.protocol == "gd"
    assert config.schedules >= 100


# -- issue 12, defect 1: a seed range the store cannot hold is refused at the door -----------


@pytest.mark.parametrize(
    ("seed", "schedules"),
    [
        (9223372036854775800, 10),  # runs past int64
        (12345678901234567890123, 1),  # 23 digits
        (10**12, 1),  # a part file's name holds 12 digits of seed
        (10**12 - 5, 10),  # the range's last seed does not fit
    ],
)
def test_a_seed_range_the_store_cannot_hold_is_refused(seed: int, schedules: int) -> None:
    with pytest.raises(CampaignConfigError, match=r"seed.*999999999999") as info:
        load_config(None, {"backend": FAKE, "seed": seed, "schedules": schedules})
    assert str(seed) in str(info.value)


def test_the_last_seed_the_store_can_hold_runs_and_resumes(tmp_path: Path) -> None:
    from gapless.spark_fuzz.campaign import run_campaign
    from gapless.spark_fuzz.config import MAX_SEED

    overrides = {
        "backend": FAKE,
        "seed": MAX_SEED - 2,
        "schedules": 3,
        "out": str(tmp_path),
        "shrink": False,
    }
    config = load_config(None, overrides)
    first = run_campaign(config, executor="loop")
    assert first.summary["schedules"] == 3
    again = run_campaign(config, executor="loop")  # the part file is found again
    assert again.executed == ()
    assert again.skipped == 3


def test_fuzz_with_a_seed_past_the_store_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gapless.cli.main import cli

    result = CliRunner().invoke(
        cli,
        [
            "fuzz",
            "--seed",
            "9223372036854775800",
            "--schedules",
            "10",
            "--out",
            str(tmp_path / "out"),
            "--executor",
            "loop",
        ],
    )
    assert result.exit_code == 2, (result.output, result.exception)
    assert "'seed'" in result.stderr
    assert not (tmp_path / "out").exists()


# -- a protocol's run config from the campaign file (issue 16: fuzz GES's finer tier) ---------

_TIER = Path(__file__).resolve().parents[2] / "campaigns" / "ges-tier.toml"


def test_the_ges_tier_campaign_sets_the_protocols_run_config() -> None:
    from gapless.spark_fuzz.backend import load_backend
    from gapless.spark_fuzz.config import canonical_json, config_from_json

    config = load_config(_TIER)
    assert dict(config.run_config) == {
        "granularity": "cluster",
        "storage_joins": "n3@1.5",
        "system_links": True,
    }
    spec = load_backend("ges", None).make_spec(config)
    assert dict(spec.config) == dict(config.run_config)
    assert config.identity()["run_config"] == dict(config.run_config)
    again = config_from_json(canonical_json(config.to_data()))
    assert again == config
    assert again.campaign_id == config.campaign_id


def test_a_campaign_without_run_config_keeps_its_identity() -> None:
    demo = Path(__file__).resolve().parents[2] / "campaigns" / "ges-demo.toml"
    config = load_config(demo)
    assert "run_config" not in config.identity()
    assert dict(config.run_config) == {}
    flagged = load_config(demo, {"run_config": {"granularity": "cluster"}})
    assert flagged.identity_digest() != config.identity_digest()


@pytest.mark.parametrize(
    ("run_config", "fragments"),
    [
        ({"bogus": 1}, ["unknown key 'bogus'", "allowed keys", "granularity", "system_links"]),
        ({"granularity": "node"}, ["granularity = 'node'", "super-cluster, cluster"]),
        ({"system_links": "yes"}, ["system_links = 'yes'", "expected a bool"]),
        ({"system_links": [1]}, ["'run_config.system_links'", "a string, a boolean"]),
        ({"storage_joins": "n3@soon", "granularity": "cluster"}, ["n3@soon", "node@seconds"]),
        ("cluster", ["'run_config'", "a table"]),
    ],
)
def test_a_bad_run_config_is_named_with_what_is_allowed(
    run_config: object, fragments: list[str]
) -> None:
    with pytest.raises(CampaignConfigError) as info:
        load_config(None, {"protocol": "ges", "topology": "ges-small", "run_config": run_config})
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


def test_fuzz_with_a_bad_run_config_key_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gapless.cli.main import cli

    bad = tmp_path / "bad.toml"
    bad.write_text(_TIER.read_text().replace("system_links = true", "system_link = true"))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["fuzz", "--config", str(bad), "--out", str(out), "--executor", "loop"]
    )
    assert result.exit_code == 2, (result.output, result.exception)
    assert "unknown key 'system_link'" in result.stderr
    assert not out.exists()
