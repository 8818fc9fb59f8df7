"""gapless.spark_fuzz."""
