"""Reference semantics of content filters: an independent, obviously-correct evaluator.

This module imports nothing of ours (DESIGN.md: ``spec`` may import nothing of the package). It
states the filter language of ``impl/filters.py`` a second time, in a different style — a
regular-expression tokenizer and precedence climbing straight to a Python closure — so the
two can be differentially tested and the invariants can judge deliveries with it.

Language: ``or`` binds loosest, then ``and``, then prefix ``not``; parentheses group;
``true``/``*`` match everything, ``false`` nothing; a comparison is ``IDENT OP LITERAL`` with
OP one of ``== != < <= > >=`` and LITERAL a quoted string (``\\\\ \\" \\' \\n \\t`` escapes),
a decimal number or ``true``/``false``.

Semantics of ``attr OP lit`` against an attribute mapping:

======================== ===========================================================
attribute missing        false, whatever the operator
number vs number         numeric comparison (bool is *not* a number)
string vs string         comparison by code points
bool vs bool             ``==``/``!=`` only; orderings are false
any other pair           ``!=`` true, everything else false
======================== ===========================================================

>>> reference_match('loc == "NY" and p > 3', {"loc": "NY", "p": 4})
True
>>> reference_match("not (p > 3) or q == true", {"p": 5, "q": True})
True
>>> reference_match("p != 1", {})
False
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ReferenceFilterError", "reference_compile", "reference_match", "reference_matcher"]


class ReferenceFilterError(ValueError):
    """The text is not a filter."""


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)(?![A-Za-z0-9_])
      | (?P<str>"(?:[^"\\]|\\[\\"'nt])*"|'(?:[^'\\]|\\[\\"'nt])*')
      | (?P<op>==|!=|<=|>=|<|>)
      | (?P<punct>[()*])
      | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
    )""",
    re.VERBOSE,
)

_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\'": "'", "\\n": "\n", "\\t": "\t"}


def _tokens(text: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    pos = 0
    text_end = len(text.rstrip())
    while pos < text_end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ReferenceFilterError(f"cannot read {text[pos:]!r}")
        pos = m.end()
        kind = m.lastgroup
        raw = m.group(kind or "")
        if kind == "num":
            is_float = any(c in raw for c in ".eE")
            out.append(("lit", float(raw) if is_float else int(raw)))
        elif kind == "str":
            body = re.sub(r"\\[\\\"'nt]", lambda e: _UNESCAPE[e.group(0)], raw[1:-1])
            out.append(("lit", body))
        elif kind == "op":
            out.append(("op", raw))
        elif kind == "punct" or raw in ("and", "or", "not"):
            out.append((raw, raw))
        elif raw in ("true", "false"):
            out.append(("bool", raw == "true"))
        else:
            out.append(("ident", raw))
    out.append(("end", None))
    return out


Pred = Callable[[Mapping[str, Any]], bool]


def _cmp(attr: str, op: str, lit: Any) -> Pred:
    def is_num(v: Any) -> bool:
        return type(v) in (int, float)

    def pred(attrs: Mapping[str, Any]) -> bool:
        if attr not in attrs:
            return False
        v = attrs[attr]
        same = (
            (is_num(v) and is_num(lit))
            or (type(v) is str and type(lit) is str)
            or (type(v) is bool and type(lit) is bool)
        )
        if not same:
            return op == "!="
        if type(v) is bool and op not in ("==", "!="):
            return False
        table: dict[str, Callable[[Any, Any], bool]] = {
            "==": lambda a, b: a == b,
            "!=": lambda a, b: a != b,
            "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b,
        }
        return bool(table[op](v, lit))

    return pred


def _either(p: Pred, q: Pred) -> Pred:
    return lambda a: p(a) or q(a)


def _both(p: Pred, q: Pred) -> Pred:
    return lambda a: p(a) and q(a)


def reference_compile(text: str) -> Pred:
    """Compile ``text`` to a predicate over attribute mappings (raises on bad text)."""
    toks = _tokens(text)
    pos = 0

    def peek() -> tuple[str, Any]:
        return toks[pos]

    def take(kind: str) -> Any:
        nonlocal pos
        k, v = toks[pos]
        if k != kind:
            raise ReferenceFilterError(f"wanted {kind}, got {k} in {text!r}")
        pos += 1
        return v

    def atom() -> Pred:
        nonlocal pos
        k, v = peek()
        if k == "not":
            pos += 1
            inner = atom()
            return lambda a: not inner(a)
        if k == "(":
            pos += 1
            inner = expr(0)
            take(")")
            return inner
        if k == "*":
            pos += 1
            return lambda a: True
        if k == "bool":
            pos += 1
            return (lambda a: True) if v else (lambda a: False)
        if k == "ident":
            pos += 1
            op = take("op")
            lk, lv = peek()
            if lk not in ("lit", "bool"):
                raise ReferenceFilterError(f"wanted a literal after {v} {op} in {text!r}")
            pos += 1
            return _cmp(v, op, lv)
        raise ReferenceFilterError(f"unexpected {k} in {text!r}")

    binding = {"or": 1, "and": 2}

    def expr(min_bp: int) -> Pred:
        nonlocal pos
        left = atom()
        while True:
            k, _ = peek()
            bp = binding.get(k)
            if bp is None or bp <= min_bp:
                return left
            pos += 1
            right = expr(bp)
            if k == "or":
                left = _either(left, right)
            else:
                left = _both(left, right)

    if peek()[0] == "end":
        raise ReferenceFilterError("empty filter")
    result = expr(0)
    if peek()[0] != "end":
        raise ReferenceFilterError(f"trailing {peek()[0]} in {text!r}")
    return result


def reference_match(text: str, attributes: Mapping[str, Any]) -> bool:
    """Does a message with ``attributes`` match the filter ``text``?"""
    return reference_compile(text)(attributes)


def reference_matcher() -> Callable[[str, Mapping[str, Any]], bool]:
    """``matches(filter_text, attributes)`` with each filter compiled once: the evaluator the
    invariants judge deliveries with."""
    cache: dict[str, Pred] = {}

    def matches(text: str, attributes: Mapping[str, Any]) -> bool:
        f = cache.get(text)
        if f is None:
            f = cache[text] = reference_compile(text)
        return bool(f(attributes))

    return matches
