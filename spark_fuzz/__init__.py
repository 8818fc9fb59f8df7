"""gapless.spark_fuzz — fuzz campaigns on Spark: seeds to verdicts, Parquet, shrinking, replay.

The only package that imports ``pyspark`` (lazily, in :mod:`.session`). Public API:

* :func:`gapless.spark_fuzz.config.load_config` ``(path=None, overrides=None) -> CampaignConfig``
  — read a TOML file, apply flag overrides, validate (``CampaignConfigError``);
* :func:`gapless.spark_fuzz.campaign.run_campaign` ``(config, *, executor="spark",
  processes=2, progress=None, spark_context=None) -> CampaignRun`` — run or resume;
* :func:`gapless.spark_fuzz.store.read_rows` ``(campaign_dir) -> pyarrow.Table`` — the rows;
* :func:`gapless.spark_fuzz.counterexample.load_counterexample` / ``replay`` /
  ``shrink_seed`` — counterexample files;
* :func:`gapless.spark_fuzz.report.write_report` ``(out_dir) -> Path`` — the HTML report;
* :func:`gapless.spark_fuzz.zoo_campaign.run_zoo` ``(base_config) -> list[dict]`` — the zoo;
* :class:`gapless.spark_fuzz.backend.Backend` — the simulator interface a protocol implements
  (every protocol of the registry: :class:`gapless.spark_fuzz.runner_backend.RunnerBackend`).

How to run and read a campaign: ``spark_fuzz/README.md``.
"""
