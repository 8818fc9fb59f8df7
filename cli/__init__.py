"""gapless.cli."""
