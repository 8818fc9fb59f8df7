"""Campaign configuration: a TOML file and/or flags, validated before any work starts.

Theory of operation
-------------------
A campaign is ``(protocol, variant, topology, workload, fault profile, seeds, simulated
duration, invariants)`` [GD §4.2 runs three such experiments by hand; a campaign runs
thousands of random ones]. :func:`load_config` reads an optional TOML file, applies flag
overrides (flags win), and validates every key — type, range and, through the protocol's
backend, topology, variant, fault kinds, invariants and workload keys — raising
:class:`CampaignConfigError` whose message names the key, the value and what is allowed.
Nothing is run or written before validation passes.

The campaign id defaults to a digest of the *identity* of the configuration: every key that
can change a row (protocol, backend, variant, topology, workload, faults, seed, duration,
invariants, timeout). The number of schedules is not part of it, so re-running a campaign
with more schedules extends it, and re-running it unchanged resumes it. Run settings (output
directory, Spark master, chunk size, shrinking limits, ``fail_fast``) are not part of it
either.

Every key is documented in ``spark_fuzz/README.md``.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, final

import attrs

from gapless.impl.errors import GaplessError
from gapless.models.faults import derive_seed
from gapless.models.protocols import PROTOCOLS
from gapless.spark_fuzz.backend import BACKENDS, BackendError, load_backend

__all__ = [
    "FAULT_PROFILES",
    "MAX_SEED",
    "TOP_LEVEL_KEYS",
    "CampaignConfig",
    "CampaignConfigError",
    "canonical_json",
    "config_for_seed",
    "config_from_json",
    "load_config",
    "setup_of_seed",
]

FAULT_PROFILES: Final = ("rates", "swarm", "rules")
MAX_SEED: Final = 10**12 - 1
"""The largest seed a campaign's store can hold: a committed chunk's file is named by its first
and last seed in 12 digits (``part-<first>-<last>.parquet``, ``store.py``), and the ``seed``
column is an int64. The whole range ``seed .. seed + schedules - 1`` must fit, checked before
any work (issue 12: a seed past int64 used to fail at the Parquet commit, after the run)."""
_ID_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class CampaignConfigError(GaplessError, ValueError):
    """A campaign file or flag that is not allowed (the message names key, value, allowed)."""


@final
@attrs.frozen(kw_only=True)
class CampaignConfig:
    """A validated campaign. Build it with :func:`load_config`, not directly."""

    protocol: str = "gd"
    backend: str | None = None
    variant: str = "none"
    topology: str = "fig3"
    workload: Mapping[str, Any] = attrs.field(factory=dict)
    fault_profile: str = "rates"
    fault_rates: Mapping[str, float] = attrs.field(factory=dict)
    schedules: int = 200
    seed: int = 0
    duration_s: float = 20.0
    invariants: tuple[str, ...] = ()
    timeout_s: float = 60.0
    id: str | None = None
    chunk_size: int = 0
    shrink: bool = True
    max_counterexamples: int = 3
    shrink_runs: int = 200
    out: str = "out/campaigns"
    master: str = "local[*]"
    partitions: int = 0
    guided: bool = False
    fail_fast: bool = False
    """Stop at the first committed chunk holding a failing schedule (a run setting: it decides
    which seeds run, never what a seed's row says)."""
    run_config: Mapping[str, Any] = attrs.field(factory=dict)
    """Overrides of the protocol's run configuration (the campaign file's ``[run_config]``
    table; ``RunSpec.config``): the protocol's entry decides which keys it accepts."""
    mix: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    """Other setups a share of the schedules runs (the campaign file's ``[mix.NAME]``
    tables, :data:`MIX_KEYS`): each seed draws its setup (:func:`setup_of_seed`)."""

    @property
    def campaign_id(self) -> str:
        """The explicit ``id``, or ``c-`` plus 12 hex digits of the identity digest."""
        return self.id if self.id is not None else "c-" + self.identity_digest()[:12]

    def identity(self) -> dict[str, Any]:
        """The keys that can change a row (see the module docstring)."""
        return {
            "protocol": self.protocol,
            "backend": self.backend,
            "variant": self.variant,
            "topology": self.topology,
            "workload": dict(sorted(self.workload.items())),
            "fault_profile": self.fault_profile,
            "fault_rates": dict(sorted(self.fault_rates.items())),
            "seed": self.seed,
            "duration_s": self.duration_s,
            "invariants": list(self.invariants),
            "timeout_s": self.timeout_s,
            # only when on, so the ids of blind campaigns stay what they were
            **({"guided": True} if self.guided else {}),
            # likewise only when given
            **({"run_config": dict(sorted(self.run_config.items()))} if self.run_config else {}),
            **({"mix": _sorted_mix(self.mix)} if self.mix else {}),
        }

    def identity_digest(self) -> str:
        return hashlib.sha256(canonical_json(self.identity()).encode()).hexdigest()

    def seeds(self) -> range:
        """The campaign's seeds: ``seed, seed+1, ..., seed+schedules-1``."""
        return range(self.seed, self.seed + self.schedules)

    def to_data(self) -> dict[str, Any]:
        """Every field as JSON-able data (inverse: :func:`config_from_json`)."""
        data = attrs.asdict(self, recurse=False)
        data["workload"] = dict(sorted(self.workload.items()))
        data["fault_rates"] = dict(sorted(self.fault_rates.items()))
        data["invariants"] = list(self.invariants)
        data["run_config"] = dict(sorted(self.run_config.items()))
        data["mix"] = _sorted_mix(self.mix)
        return data


def _sorted_mix(mix: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: dict(sorted(mix[name].items())) for name in sorted(mix)}


def setup_of_seed(config: CampaignConfig, seed: int) -> str:
    """The setup seed ``seed`` of ``config`` runs: the name of one of its ``mix`` setups, or
    ``""`` for the campaign's own. A deterministic draw from the campaign seed and ``seed``
    alone (``derive_seed(config.seed, "mix", seed)``): the same in every process, after a
    resume, and whatever the number of schedules; setups take their ``share`` of the unit
    interval in name order, the rest is the campaign's own setup."""
    if not config.mix:
        return ""
    u = random.Random(derive_seed(config.seed, "mix", seed)).random()
    edge = 0.0
    for name in sorted(config.mix):
        edge += float(config.mix[name]["share"])
        if u < edge:
            return name
    return ""


def config_for_seed(config: CampaignConfig, seed: int) -> CampaignConfig:
    """The configuration seed ``seed`` runs under: ``config`` itself, or ``config`` with the
    drawn mix setup's keys applied (``topology``, ``invariants`` replaced; ``workload`` and
    ``run_config`` merged), no mix, and the campaign's own id (its rows stay one campaign)."""
    name = setup_of_seed(config, seed)
    if not name:
        return config
    return _with_setup(attrs.evolve(config, id=config.campaign_id), config.mix[name])


def _with_setup(config: CampaignConfig, setup: Mapping[str, Any]) -> CampaignConfig:
    return attrs.evolve(
        config,
        mix={},
        topology=setup.get("topology", config.topology),
        invariants=tuple(setup.get("invariants", config.invariants)),
        workload=dict(sorted({**config.workload, **setup.get("workload", {})}.items())),
        run_config=dict(sorted({**config.run_config, **setup.get("run_config", {})}.items())),
        fault_rates={
            k: float(v) for k, v in sorted(setup.get("fault_rates", config.fault_rates).items())
        },
    )


def canonical_json(data: Any) -> str:
    """Sorted keys, no spaces: the same text for the same data in every process."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


def config_from_json(text: str) -> CampaignConfig:
    """Rebuild a configuration written by ``canonical_json(config.to_data())`` (no checks
    against the backend: it was validated when it was written)."""
    data = json.loads(text)
    data["invariants"] = tuple(data["invariants"])
    data.setdefault("run_config", {})
    data.setdefault("fail_fast", False)
    data.setdefault("mix", {})
    return CampaignConfig(**data)


# -- validation ------------------------------------------------------------------------------

TOP_LEVEL_KEYS: Final[dict[str, str]] = {
    "id": "a campaign id: 1-64 characters of letters, digits, '.', '_', '-'",
    "protocol": "a protocol name",
    "backend": "'package.module:factory' of a custom simulator backend",
    "variant": "a protocol variant name ('none' = the correct protocol)",
    "topology": "a topology name",
    "schedules": "an integer >= 1",
    "seed": f"an integer >= 0 whose last seed (seed + schedules - 1) is <= {MAX_SEED}",
    "duration_s": "a number of simulated seconds > 0 and <= 3600",
    "invariants": "a list of invariant names (empty = all)",
    "timeout_s": "a number of wall-clock seconds per schedule > 0",
    "chunk_size": "seeds per committed chunk: an integer >= 0 (0 = automatic)",
    "partitions": "an integer >= 0: Spark tasks in flight (0 = automatic)",
    "shrink": "true or false",
    "guided": "true or false (coverage-guided schedules beside a blind twin campaign)",
    "fail_fast": "true or false (stop at the first chunk with a failing schedule)",
    "max_counterexamples": "an integer >= 0",
    "shrink_runs": "an integer >= 1 (simulations allowed per shrink)",
    "out": "an output directory",
    "master": "a Spark master URL: local, local[N], local[*], local[N,F], "
    "local-cluster[W,C,M] or spark://HOST:PORT",
    "workload": "a table of workload keys",
    "faults": "a table with 'profile' and 'rates'",
    "run_config": "a table of the protocol's run config keys (strings, booleans, numbers)",
    "mix": "tables [mix.NAME]: other setups a share of the schedules runs",
}
MIX_KEYS: Final[dict[str, str]] = {
    "share": "the share of the schedules that run this setup: a number > 0 and <= 1 "
    "(the shares of all setups sum to <= 1; the rest runs the campaign's own setup)",
    "topology": "a topology name (default: the campaign's)",
    "invariants": "a list of invariant names (default: the campaign's)",
    "workload": "a table of workload keys, merged over the campaign's",
    "run_config": "a table of run config keys, merged over the campaign's",
    "fault_rates": "a table fault kind -> rate that replaces the campaign's faults.rates",
}
_FAULT_KEYS: Final = {
    "profile": "'rates', 'swarm' or 'rules'",
    "rates": "a table fault kind -> rate",
}
_MASTER_RE: Final = re.compile(
    r"^(local|local\[(\*|[1-9][0-9]*)\]|local\[(\*|[1-9][0-9]*),[1-9][0-9]*\]"
    r"|local-cluster\[[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]*\]|spark://[^\s/:]+:[0-9]{1,5})$"
)


def _fail(key: str, value: Any, allowed: str, where: str) -> CampaignConfigError:
    return CampaignConfigError(
        f"{where}: key {key!r} = {value!r} is not allowed; expected {allowed}"
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _check_int(data: Mapping[str, Any], key: str, lo: int, where: str) -> None:
    if key in data and (not _is_int(data[key]) or data[key] < lo):
        raise _fail(key, data[key], TOP_LEVEL_KEYS[key], where)


def _check_number(data: Mapping[str, Any], key: str, hi: float, where: str) -> None:
    if key in data and (not _is_number(data[key]) or not 0 < data[key] <= hi):
        raise _fail(key, data[key], TOP_LEVEL_KEYS[key], where)


def _check_str(data: Mapping[str, Any], key: str, where: str) -> None:
    if key in data and (not isinstance(data[key], str) or not data[key]):
        raise _fail(key, data[key], TOP_LEVEL_KEYS[key], where)


def _check_seed_range(data: Mapping[str, Any], where: str) -> None:
    """Every seed of the campaign must fit the store (:data:`MAX_SEED`)."""
    seed = data.get("seed", 0)
    last = seed + data.get("schedules", 200) - 1
    if last > MAX_SEED:
        raise CampaignConfigError(
            f"{where}: key 'seed' = {seed!r} with 'schedules' = {data.get('schedules', 200)!r} "
            f"runs to seed {last}, past what the store can hold; expected the last seed "
            f"(seed + schedules - 1) <= {MAX_SEED}"
        )


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overrides.items():
        if value is None:
            continue
        if key in ("workload", "faults", "run_config") and isinstance(value, Mapping):
            inner = dict(merged.get(key) or {})
            inner.update(value)
            merged[key] = inner
        else:
            merged[key] = value
    return merged


def load_config(
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    check_backend: bool = True,
) -> CampaignConfig:
    """Read, merge and validate a campaign.

    ``overrides`` are flag values (``None`` means "not given"); they win over the file.
    Raises :class:`CampaignConfigError` for anything not allowed, before any work starts.
    """
    raw: dict[str, Any] = {}
    where = "campaign config"
    if path is not None:
        where = f"campaign file {str(path)!r}"
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise CampaignConfigError(
                f"{where}: cannot be read ({exc.strerror or exc}); expected a readable TOML file"
            ) from exc
        except UnicodeDecodeError as exc:
            raise CampaignConfigError(f"{where}: is not UTF-8 text ({exc})") from exc
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise CampaignConfigError(f"{where}: is not valid TOML: {exc}") from exc
    data = _merge(raw, overrides or {})
    if overrides:
        where = where + " (with flags)"

    for key in sorted(data):
        if key not in TOP_LEVEL_KEYS:
            raise CampaignConfigError(
                f"{where}: unknown key {key!r}; allowed keys: {', '.join(sorted(TOP_LEVEL_KEYS))}"
            )
    for key in ("protocol", "variant", "topology", "out"):
        _check_str(data, key, where)
    if "backend" in data and (not isinstance(data["backend"], str) or ":" not in data["backend"]):
        raise _fail("backend", data["backend"], TOP_LEVEL_KEYS["backend"], where)
    if "id" in data and (not isinstance(data["id"], str) or not _ID_RE.match(data["id"])):
        raise _fail("id", data["id"], TOP_LEVEL_KEYS["id"], where)
    _check_int(data, "schedules", 1, where)
    _check_int(data, "seed", 0, where)
    _check_int(data, "chunk_size", 0, where)
    _check_int(data, "partitions", 0, where)
    _check_int(data, "max_counterexamples", 0, where)
    _check_int(data, "shrink_runs", 1, where)
    if "schedules" in data and data["schedules"] > 100_000_000:
        raise _fail("schedules", data["schedules"], "an integer >= 1 and <= 100000000", where)
    _check_seed_range(data, where)
    _check_number(data, "duration_s", 3600.0, where)
    _check_number(data, "timeout_s", 86400.0, where)
    for flag in ("shrink", "guided", "fail_fast"):
        if flag in data and not isinstance(data[flag], bool):
            raise _fail(flag, data[flag], TOP_LEVEL_KEYS[flag], where)
    if "master" in data and (
        not isinstance(data["master"], str) or not _MASTER_RE.match(data["master"])
    ):
        raise _fail("master", data["master"], TOP_LEVEL_KEYS["master"], where)
    invariants = data.get("invariants", [])
    if not isinstance(invariants, list | tuple) or not all(
        isinstance(i, str) and i for i in invariants
    ):
        raise _fail("invariants", invariants, TOP_LEVEL_KEYS["invariants"], where)
    workload = data.get("workload", {})
    if not isinstance(workload, Mapping):
        raise _fail("workload", workload, TOP_LEVEL_KEYS["workload"], where)
    faults = data.get("faults", {})
    if not isinstance(faults, Mapping):
        raise _fail("faults", faults, TOP_LEVEL_KEYS["faults"], where)
    for key in sorted(faults):
        if key not in _FAULT_KEYS:
            raise CampaignConfigError(
                f"{where}: unknown key 'faults.{key}'; allowed keys: faults.profile, faults.rates"
            )
    run_config = data.get("run_config", {})
    if not isinstance(run_config, Mapping):
        raise _fail("run_config", run_config, TOP_LEVEL_KEYS["run_config"], where)
    for key in sorted(run_config):
        value = run_config[key]
        if not (isinstance(value, str | bool) or _is_number(value)):
            raise _fail(f"run_config.{key}", value, "a string, a boolean or a finite number", where)
    mix = _checked_mix(data, where)
    profile = faults.get("profile", "rates")
    if profile not in FAULT_PROFILES:
        raise _fail("faults.profile", profile, _FAULT_KEYS["profile"], where)
    rates = faults.get("rates", {})
    if not isinstance(rates, Mapping):
        raise _fail("faults.rates", rates, _FAULT_KEYS["rates"], where)
    for kind in sorted(rates):
        rate = rates[kind]
        if not _is_number(rate) or not 0 <= rate <= 1000:
            raise _fail(
                f"faults.rates.{kind}",
                rate,
                "a rate per simulated second: a number >= 0 and <= 1000",
                where,
            )

    config = CampaignConfig(
        protocol=data.get("protocol", "gd"),
        backend=data.get("backend"),
        variant=data.get("variant", "none"),
        topology=data.get("topology") or _default_topology(data.get("protocol", "gd")),
        workload=dict(sorted(workload.items())),
        fault_profile=profile,
        fault_rates={k: float(v) for k, v in sorted(rates.items())},
        schedules=data.get("schedules", 200),
        seed=data.get("seed", 0),
        duration_s=float(data.get("duration_s", 20.0)),
        invariants=tuple(invariants),
        timeout_s=float(data.get("timeout_s", 60.0)),
        id=data.get("id"),
        chunk_size=data.get("chunk_size", 0),
        shrink=data.get("shrink", True),
        max_counterexamples=data.get("max_counterexamples", 3),
        shrink_runs=data.get("shrink_runs", 200),
        out=data.get("out", "out/campaigns"),
        master=data.get("master", "local[*]"),
        partitions=data.get("partitions", 0),
        guided=data.get("guided", False),
        fail_fast=data.get("fail_fast", False),
        run_config=dict(sorted(run_config.items())),
        mix=mix,
    )
    if check_backend:
        check_against_backend(config, where)
    return config


def _checked_mix(data: Mapping[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """The ``mix`` tables, checked for their keys and types (names against the backend later)."""
    mix = data.get("mix", {})
    if not isinstance(mix, Mapping):
        raise _fail("mix", mix, TOP_LEVEL_KEYS["mix"], where)
    if mix and data.get("guided", False):
        raise _fail("mix", dict(mix), "no mix in a guided campaign (not supported yet)", where)
    total = 0.0
    for name in sorted(mix):
        setup = mix[name]
        if not isinstance(setup, Mapping) or not _ID_RE.match(name):
            raise _fail(
                f"mix.{name}", setup, "a table named by letters, digits, '.', '_', '-'", where
            )
        for key in sorted(setup):
            if key not in MIX_KEYS:
                raise CampaignConfigError(
                    f"{where}: unknown key 'mix.{name}.{key}'; allowed: {', '.join(MIX_KEYS)}"
                )
        share: Any = setup.get("share")
        if not _is_number(share) or not 0 < share <= 1:
            raise _fail(f"mix.{name}.share", share, MIX_KEYS["share"], where)
        total += float(share)
        kinds = (
            ("topology", str),
            ("invariants", list),
            ("workload", Mapping),
            ("run_config", Mapping),
            ("fault_rates", Mapping),
        )
        for key, kind in kinds:
            if key in setup and not isinstance(setup[key], kind):
                raise _fail(f"mix.{name}.{key}", setup[key], MIX_KEYS[key], where)
        for key, value in sorted(setup.get("run_config", {}).items()):
            if not (isinstance(value, str | bool) or _is_number(value)):
                raise _fail(
                    f"mix.{name}.run_config.{key}",
                    value,
                    "a string, a boolean or a finite number",
                    where,
                )
        for kind, rate in sorted(setup.get("fault_rates", {}).items()):
            if not _is_number(rate) or not 0 <= rate <= 1000:
                raise _fail(
                    f"mix.{name}.fault_rates.{kind}", rate, "a number >= 0 and <= 1000", where
                )
    if total > 1 + 1e-9:
        raise _fail("mix", dict(mix), "shares that sum to <= 1", where)
    return {
        name: {
            key: (
                dict(sorted(v.items()))
                if isinstance(v, Mapping)
                else list(v)
                if isinstance(v, list)
                else v
            )
            for key, v in sorted(mix[name].items())
        }
        for name in sorted(mix)
    }


def _default_topology(protocol_name: Any) -> str:
    """The registered protocol's default topology (``fig3`` for GD and for a name the
    registry does not know: the backend check names what is allowed)."""
    entry = PROTOCOLS.get(protocol_name) if isinstance(protocol_name, str) else None
    return entry.default_topology if entry is not None else "fig3"


def check_against_backend(config: CampaignConfig, where: str = "campaign config") -> None:
    """Validate the names a backend defines: protocol, topology, variant, fault kinds,
    invariants and workload keys; then let the backend build its spec."""
    try:
        backend = load_backend(config.protocol, config.backend)
    except BackendError as exc:
        if config.backend is None:
            raise _fail("protocol", config.protocol, _allowed_protocols(), where) from exc
        raise CampaignConfigError(f"{where}: key 'backend': {exc}") from exc
    _one_of("topology", config.topology, backend.topologies(), where)
    _one_of("variant", config.variant, backend.variants(), where)
    kinds = list(backend.fault_kinds())
    for kind in config.fault_rates:
        if kind not in kinds:
            raise CampaignConfigError(
                f"{where}: unknown fault kind 'faults.rates.{kind}'; allowed: {', '.join(kinds)}"
            )
    names = list(backend.invariants())
    for name in config.invariants:
        if name not in names:
            raise _fail("invariants", name, "invariant names among " + ", ".join(names), where)
    allowed_workload = backend.workload_keys()
    for key in config.workload:
        if key not in allowed_workload:
            raise CampaignConfigError(
                f"{where}: unknown key 'workload.{key}'; allowed: "
                + ", ".join(f"{k} ({v})" for k, v in sorted(allowed_workload.items()))
            )
    try:
        backend.make_spec(config)
    except (ValueError, TypeError) as exc:
        raise CampaignConfigError(f"{where}: {exc}") from exc
    for name in sorted(config.mix):
        check_against_backend(_with_setup(config, config.mix[name]), f"{where}, mix.{name}")


def _allowed_protocols() -> str:
    return "one of " + ", ".join(sorted(BACKENDS)) + " (or set 'backend')"


def _one_of(key: str, value: str, allowed: Any, where: str) -> None:
    allowed_list = list(allowed)
    if value not in allowed_list:
        raise _fail(key, value, "one of " + ", ".join(allowed_list), where)
