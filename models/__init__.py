"""gapless.models — the world around the verified core (DESIGN.md).

* :mod:`gapless.models.runner` — the campaign API: ``RunSpec``, ``generate_schedule(spec,
  seed)``, ``run(spec, schedule, seed, *, record_trace=False) -> RunOutcome``, shrink helpers;
* :mod:`gapless.models.world` — the deterministic discrete-event network (``World``, ``Run``,
  ``simulate``);
* :mod:`gapless.models.faults` — fault schedules as plain data, each event with its own
  random stream;
* :mod:`gapless.models.topology` — topologies as networkx graphs (GD Figure 3, the
  total-order merge graph, the two-broker network of GD §4.1);
* :mod:`gapless.models.workload` — pubend rates, attributes, subscribers and filters;
* :mod:`gapless.models.binding` / :mod:`gapless.models.gd_binding` — how a protocol's pure
  roles plug into the world;
* :mod:`gapless.models.scenarios` — the paper's failure experiments [GD §4.2].
"""
