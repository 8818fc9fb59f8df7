"""gapless.models — the world around the verified core (DESIGN.md).

Bottom to top (each module imports only those above it in this list):

* :mod:`gapless.models.faults`, :mod:`gapless.models.topology`,
  :mod:`gapless.models.workload` — fault schedules, topologies and workloads as plain data;
* :mod:`gapless.models.binding` — what the world needs of a protocol (the ``Binding``);
* :mod:`gapless.models.world` — the deterministic discrete-event engine (``World``) only;
* :mod:`gapless.models.runspec` — ``RunSpec`` and ``RunOutcome``;
* :mod:`gapless.models.registry` — ``ProtocolEntry`` and ``Scenario``: what the kit needs of
  a protocol, in one value;
* one protocol's modules: :mod:`gapless.models.gd_binding`, :mod:`gapless.models.gd_scenarios`
  (the paper's failure experiments [GD §4.2]), :mod:`gapless.models.gd_protocol` (its entry);
* :mod:`gapless.models.protocols` — the one registry: every protocol by name;
* :mod:`gapless.models.run` — a spec and a seed built into a world, checker and counters
  (``Run``, ``simulate``, ``run_context``);
* :mod:`gapless.models.runner` — the campaign API: ``generate_schedule(spec, seed)``,
  ``run(spec, schedule, seed, *, record_trace=False) -> RunOutcome``, shrink helpers,
  ``run_scenario(name)``.
"""
