"""Typed errors raised by the verified core for a *local caller's* mistakes.

Network input never raises: a malformed or unexpected message becomes a recorded
``Rejected`` effect so fuzzing keeps running and the invariants judge (STYLE.md, "Errors").
Every message names the operation, the offending value and what is allowed.
"""

from __future__ import annotations

__all__ = ["GaplessError", "InvalidRange", "InvalidTick", "LatticeMismatch", "ProtocolMisuse"]


class GaplessError(Exception):
    """Base class of every error the core raises on purpose."""


class InvalidTick(GaplessError, ValueError):
    """A tick that is negative, not an int, or otherwise outside the allowed domain."""


class InvalidRange(GaplessError, ValueError):
    """An empty or inverted tick range ``[start, end]``."""


class LatticeMismatch(GaplessError, TypeError):
    """A value of the wrong lattice (e.g. a curiosity value given to a knowledge stream)."""


class ProtocolMisuse(GaplessError, RuntimeError):
    """A role was driven by its local caller in a way its state machine does not allow."""
