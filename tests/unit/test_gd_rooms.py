"""The GD roles' rooms: one module per role or paper section, each role its own state type, a
dispatch table whose every handler names its paper section, inputs a role does not accept
rejected (network) or refused (caller), and ``spec/gd.md``'s map generated from the table."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from gapless.impl.effects import Rejected
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd import (
    BestEffortIB,
    BestEffortPHB,
    BestEffortSHB,
    GDConfig,
    IBState,
    PHBState,
    SHBState,
    crash,
    figure3,
    handle,
    initial_states,
    node,
    rulemap,
    two_broker,
)
from gapless.impl.gd.messages import Ack, AckExpected, Data, Knowledge, LinkStatus, Nack
from gapless.impl.gd.state import ROLE_TYPES, NodeCtx
from gapless.impl.inputs import (
    Connect,
    Disconnect,
    LinkChanged,
    Persisted,
    Publish,
    Receive,
    Restart,
    TimerFired,
)

ROOT = Path(__file__).resolve().parents[2]
GD = ROOT / "impl" / "gd"
TAG = re.compile(r"\[GD §\d")


def booted(best_effort: bool = False) -> dict[str, Any]:
    """Every broker of Figure 3, booted at time 0."""
    states = initial_states(figure3(), GDConfig(best_effort=best_effort))
    return {n: handle(s, Restart(), 0)[0] for n, s in states.items()}


# -- the role is a type ----------------------------------------------------------------------


def test_each_role_is_its_own_state_type() -> None:
    gd = booted()
    assert type(gd["p1"]) is PHBState
    assert type(gd["b1"]) is IBState
    assert type(gd["s1"]) is SHBState
    be = booted(best_effort=True)
    assert type(be["p1"]) is BestEffortPHB
    assert type(be["b1"]) is BestEffortIB
    assert type(be["s1"]) is BestEffortSHB
    # each type holds only what its role uses
    names = {t: {f.name for f in attrs.fields(t)} for t in ROLE_TYPES}
    assert "log" in names[PHBState]
    assert "log" not in names[IBState] | names[SHBState]
    assert "connections" in names[SHBState]
    assert "connections" not in names[IBState]
    assert "streams" not in names[BestEffortIB] | names[BestEffortPHB] | names[BestEffortSHB]
    assert "role" not in {f.name for f in attrs.fields(NodeCtx)}


def test_no_room_tells_roles_apart_by_a_string() -> None:
    for module in rulemap.ROOMS:
        path = GD / (module.__name__.rsplit(".", 1)[-1] + ".py")
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\.role\s*[!=]=", text), f"{path.name} compares a role string"
        if path.name != "build.py":  # the one place best effort picks the role set
            assert "config.best_effort" not in text, f"{path.name} branches on best effort"


def test_crash_keeps_only_the_pubends_log() -> None:
    gd = booted()
    p1 = crash(gd["p1"])
    assert type(p1) is PHBState
    assert not p1.up
    assert p1.log is gd["p1"].log
    b1 = crash(gd["b1"])
    assert type(b1) is IBState
    assert not b1.up
    assert b1.streams == ()
    with pytest.raises(ProtocolMisuse, match="not a GD node state"):
        crash("b1")  # type: ignore[arg-type]


# -- the dispatch table ------------------------------------------------------------------------


def all_handlers() -> list[tuple[type, str, Any]]:
    return rulemap.handlers()


def test_every_handler_names_its_paper_section() -> None:
    rows = all_handlers()
    assert len(rows) >= 40
    missing = [
        f"{r.__name__} {w}: {h.__module__}.{h.__name__}"
        for r, w, h in rows
        if not TAG.search(h.__doc__ or "")
    ]
    assert missing == []


def test_the_section_check_can_fail() -> None:
    def untagged() -> None:
        """A handler that names no section."""

    assert not TAG.search(untagged.__doc__ or "")
    assert rulemap.sections(untagged.__doc__) == ()
    assert rulemap.sections("x [GD §2.2, §3.1] y [GD §3.1, link bundles]") == ("§2.2", "§3.1")


def test_every_room_has_a_theory_of_operation_naming_sections() -> None:
    for module in rulemap.ROOMS:
        doc = module.__doc__ or ""
        assert "Theory of operation" in doc, module.__name__
        assert rulemap.sections(doc.split("\n\n", 1)[0]), f"{module.__name__}: title names no §"
    # and every module of impl/gd that holds rules is a room
    rooms = {m.__name__.rsplit(".", 1)[-1] for m in rulemap.ROOMS}
    for role in ROLE_TYPES:
        for (r, _), h in [*node.ON_INPUT.items(), *node.ON_MESSAGE.items(), *node.ON_TIMER.items()]:
            if r is role:
                assert h.__module__.rsplit(".", 1)[-1] in rooms


def test_handlers_fit_the_table_signatures() -> None:
    for table, arity in ((node.ON_INPUT, 3), (node.ON_MESSAGE, 4), (node.ON_TIMER, 3)):
        for key, h in table.items():
            assert len(inspect.signature(h).parameters) == arity, (key, h)
    assert {k for _, k in node.ON_TIMER} == set(node.TIMER_ARGS)


# -- inputs a role does not accept ----------------------------------------------------------


def test_a_message_a_role_does_not_accept_is_rejected_naming_role_input_and_accepted() -> None:
    gd = booted()
    d = Data(pubend="P0", tick=5, attributes={})
    st, eff = handle(gd["p1"], Receive(sender="b1", msg=Knowledge(pubend="P0", data=d)), 10)
    assert st is gd["p1"]
    (rej,) = eff
    assert isinstance(rej, Rejected)
    assert "pubend hosting broker 'p1' (PHB) does not accept Receive(Knowledge)" in rej.reason
    assert "Receive(Nack)" in rej.reason
    assert "Publish" in rej.reason
    assert rej.input == Receive(sender="b1", msg=Knowledge(pubend="P0", data=d))
    shb = gd["s1"]
    sender = shb.ctx.neighbours[0]
    for msg in (Nack(pubend="P0", start=1, end=2), Ack(pubend="P0", upto=3)):
        st, (rej,) = handle(shb, Receive(sender=sender, msg=msg), 10)
        assert st is shb
        assert f"(SHB) does not accept Receive({type(msg).__name__})" in rej.reason
        assert "Receive(Knowledge), Receive(AckExpected)" in rej.reason


def test_best_effort_roles_reject_what_guaranteed_delivery_needs() -> None:
    be = booted(best_effort=True)
    b1 = be["b1"]
    sender = b1.ctx.neighbours[-1]
    for msg in (Nack(pubend="P0", start=1, end=2), AckExpected(pubend="P0", upto=3)):
        st, (rej,) = handle(b1, Receive(sender=sender, msg=msg), 10)
        assert st is b1
        assert "best-effort intermediate broker 'b1' (IB)" in rej.reason
    st, (rej,) = handle(be["p1"], TimerFired(key=("gd", 1, "silence")), 10)
    assert "does not accept TimerFired('silence')" in rej.reason


def test_world_events_a_role_does_not_accept_are_rejected() -> None:
    gd = booted()
    ib = gd["b1"]
    _, (rej,) = handle(ib, Persisted(key=("gd-log", "P0", 4)), 10)
    assert "(IB) does not accept Persisted" in rej.reason
    _, (rej,) = handle(ib, TimerFired(key=("gd", ib.epoch, "gct", "P0")), 10)
    assert "does not accept TimerFired('gct')" in rej.reason
    # one ack timer per node (issue 17): a pubend after its kind is an argument too many
    _, (rej,) = handle(ib, TimerFired(key=("gd", ib.epoch, "ack", "P0")), 10)
    assert "does not accept TimerFired('ack')" in rej.reason
    # a timer of an earlier incarnation is not an error: it is ignored
    assert handle(ib, TimerFired(key=("gd", ib.epoch - 1, "gct", "P0")), 10) == (ib, ())


def test_caller_inputs_a_role_does_not_accept_raise() -> None:
    gd = booted()
    with pytest.raises(ProtocolMisuse, match=r"does not host pubend 'P0'.*\(IB\)"):
        handle(gd["b1"], Publish(pubend="P0"), 10)
    with pytest.raises(ProtocolMisuse, match="subscribers connect to an SHB"):
        handle(gd["p1"], Connect(subscriber="u", filter="*"), 10)
    with pytest.raises(ProtocolMisuse, match="it accepts: Restart"):
        handle(gd["b1"], Disconnect(subscriber="u"), 10)
    with pytest.raises(ProtocolMisuse, match="allowed: Restart, Receive"):
        handle(gd["b1"], "not an input", 10)  # type: ignore[arg-type]


def test_every_role_answers_every_input() -> None:
    """No (role, input) falls through: a handler runs, a Rejected names it, or misuse raises."""
    gd, be = booted(), booted(best_effort=True)
    inputs = [
        Receive(sender="x", msg=LinkStatus(reach=())),
        TimerFired(key=("gd", 1, "nope")),
        Persisted(key=("gd-log", "P0", 1)),
        LinkChanged(neighbour="x", up=False),
        Publish(pubend="P0"),
        Connect(subscriber="u", filter="*"),
        Disconnect(subscriber="u"),
    ]
    for states in (gd, be):
        for name in ("p1", "b1", "s1"):
            st = states[name]
            for inp in inputs:
                if (type(st), type(inp)) in node.ON_INPUT:
                    continue
                if isinstance(inp, (Publish, Connect, Disconnect)):
                    with pytest.raises(ProtocolMisuse):
                        handle(st, inp, 10)
                else:
                    got, eff = handle(st, inp, 10)
                    assert got is st
                    assert len(eff) == 1
                    assert isinstance(eff[0], Rejected)


def test_two_broker_roles_still_boot_and_run() -> None:
    states = initial_states(two_broker({"a": "*"}), GDConfig())
    for s in states.values():
        st, eff = handle(s, Restart(), 0)
        assert st.up
        assert st.epoch == 1
        assert eff


# -- the rule map ------------------------------------------------------------------------------


def test_spec_gd_md_map_is_generated_from_the_dispatch_table() -> None:
    page = (ROOT / "spec" / "gd.md").read_text(encoding="utf-8")
    generated = rulemap.render()
    assert generated.rstrip("\n") in page, (
        "spec/gd.md's generated map is stale: run python benchmarks/gd_rule_map.py --write"
    )
    # every row of the table is on the page
    for role, what, h in rulemap.handlers():
        assert f"`{what}` | `{h.__module__.rsplit('.', 1)[-1]}.{h.__name__}`" in generated
        assert role.__name__ in generated
    assert f"| `ack_delay_us` | {GDConfig().ack_delay_us:_} µs |" in generated


def test_a_stale_map_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    page = (ROOT / "spec" / "gd.md").read_text(encoding="utf-8")
    table = dict(node.ON_TIMER)
    del table[(IBState, "forget")]
    monkeypatch.setattr(node, "ON_TIMER", table)
    assert rulemap.render().rstrip("\n") not in page


def test_magic_numbers_are_named() -> None:
    for path in sorted(GD.glob("*.py")):
        if path.name == "step.py":
            continue
        text = path.read_text(encoding="utf-8")
        assert "1 << 62" not in text, path.name
        assert "65_536" not in text.replace("_MEMO_SIZE: Final = 65_536", "").replace(
            "COHORTS_PER_MAP: Final = 65_536", ""
        ), path.name
