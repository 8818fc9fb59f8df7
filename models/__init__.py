"""gapless.models."""
