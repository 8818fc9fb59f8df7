"""Content filters: a small expression language over message attributes [GD §2, Figure 1].

Theory of operation
-------------------
A subscription in Gryphon is a predicate over a message's attributes, e.g. Figure 1's
``Loc = NY ∧ p > 3``. Ours is written ``loc == "NY" and p > 3``::

    expr       := or_expr
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | primary
    primary    := "(" expr ")" | "true" | "false" | "*" | comparison
    comparison := IDENT OP literal          OP: == != < <= > >=
    literal    := STRING | NUMBER | "true" | "false"

Strings are single- or double-quoted with backslash escapes (``\\\\ \\" \\' \\n \\t``); numbers
are decimal ints or floats (optionally with an exponent, optionally negative); identifiers are
``[A-Za-z_][A-Za-z0-9_.]*``. ``true`` and ``*`` match every message, ``false`` none.
Parsing is a tokenizer plus a recursive-descent parser — never Python ``eval``; a mistake
raises :class:`FilterSyntaxError` naming the position and what was expected.

Semantics of a comparison ``attr OP literal``: a missing attribute makes it false (``!=`` too);
two numbers (int or float, never bool) compare numerically; two strings compare by code
points; two bools support only ``==``/``!=``; values of different types are unequal (``==``
false, ``!=`` true) and unordered (``<`` etc. false). ``spec/filters.py`` states the same
semantics independently and the two are differentially tested.

:class:`FilterIndex` matches a message against many subscriptions at once: a subscription that
is a single equality ``attr == literal`` sits in a hash bucket keyed by ``(attr, literal)``
and is found by lookup, not by scanning [GD §4.1: 10,000 subscribers at one SHB]; the others
are evaluated one by one.

>>> f = parse_filter('loc == "NY" and p > 3')
>>> f.matches({"loc": "NY", "p": 4}), f.matches({"loc": "NY", "p": 3}), f.matches({})
(True, False, False)
>>> try:
...     parse_filter("p >")
... except FilterSyntaxError as err:
...     print(err.position, err.expected)
3 a literal (string, number, true or false)
>>> ix = FilterIndex().add("a", 'sym == "X"').add("b", "p > 1").add("c", "*")
>>> ix.match({"sym": "X", "p": 0})
('a', 'c')
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.errors import GaplessError, ProtocolMisuse

__all__ = [
    "MATCH_ALL",
    "And",
    "Cmp",
    "Const",
    "Filter",
    "FilterIndex",
    "FilterSyntaxError",
    "Node",
    "Not",
    "Or",
    "compile_node",
    "parse_filter",
]

Literal = str | int | float | bool
OPS: Final = ("==", "!=", "<=", ">=", "<", ">")
KEYWORDS: Final = frozenset({"and", "or", "not", "true", "false"})


class FilterSyntaxError(GaplessError, ValueError):
    """A filter text that does not parse; ``position`` (0-based) and ``expected`` say why."""

    def __init__(self, text: str, position: int, expected: str, found: str) -> None:
        super().__init__(
            f"filter {text!r} at position {position}: expected {expected}, found {found}"
        )
        self.text = text
        self.position = position
        self.expected = expected
        self.found = found


# -- AST ---------------------------------------------------------------------------------


@final
@attrs.frozen
class Const:
    value: bool


@final
@attrs.frozen
class Cmp:
    attr: str
    op: str
    literal: Literal


@final
@attrs.frozen
class Not:
    item: Node


@final
@attrs.frozen
class And:
    items: tuple[Node, ...]


@final
@attrs.frozen
class Or:
    items: tuple[Node, ...]


Node = Const | Cmp | Not | And | Or


def _is_num(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _compare(value: Any, op: str, lit: Literal) -> bool:
    if (_is_num(value) and _is_num(lit)) or (isinstance(value, str) and isinstance(lit, str)):
        pass
    elif isinstance(value, bool) and isinstance(lit, bool):
        if op == "==":
            return value is lit
        if op == "!=":
            return value is not lit
        return False
    else:  # different types: unequal and unordered
        return op == "!="
    if op == "==":
        return bool(value == lit)
    if op == "!=":
        return bool(value != lit)
    if op == "<":
        return bool(value < lit)
    if op == "<=":
        return bool(value <= lit)
    if op == ">":
        return bool(value > lit)
    return bool(value >= lit)


_MISSING: Final = object()


def evaluate(node: Node, attributes: Mapping[str, Any]) -> bool:
    """Evaluate an AST against ``attributes``."""
    if isinstance(node, Cmp):
        value = attributes.get(node.attr, _MISSING)
        if value is _MISSING:
            return False
        return _compare(value, node.op, node.literal)
    if isinstance(node, And):
        return all(evaluate(i, attributes) for i in node.items)
    if isinstance(node, Or):
        return any(evaluate(i, attributes) for i in node.items)
    if isinstance(node, Not):
        return not evaluate(node.item, attributes)
    return node.value


_Matcher = Callable[[Mapping[str, Any]], bool]
_COMPILED: dict[int, tuple[Node, _Matcher]] = {}
_COMPILED_MAX: Final = 4096
_FAST_OPS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def compile_node(node: Node) -> _Matcher:
    """``evaluate(node, ·)`` as one closure per AST node: the node's kind is dispatched once,
    here, instead of at every message. A comparison of a value of the literal's own exact
    type (int or float against a number, str against a string) goes straight to the
    operator, which is what :func:`_compare` does for those types; anything else (a missing
    attribute, a bool, another type, a subclass) takes :func:`_compare` itself, so the
    semantics are :func:`evaluate`'s by construction (and differentially tested)."""
    if isinstance(node, Cmp):
        attr, op, lit = node.attr, node.op, node.literal
        opf = _FAST_OPS[op]
        fast: tuple[type, ...] = ()
        if type(lit) is str:
            fast = (str,)
        elif type(lit) is int or type(lit) is float:
            fast = (int, float)

        def cmp(attributes: Mapping[str, Any]) -> bool:
            value = attributes.get(attr, _MISSING)
            if type(value) in fast:
                return opf(value, lit)
            if value is _MISSING:
                return False
            return _compare(value, op, lit)

        return cmp
    if isinstance(node, And | Or):
        parts = tuple(compile_node(i) for i in node.items)
        if isinstance(node, And):

            def conj(attributes: Mapping[str, Any]) -> bool:
                # a plain loop, not all() over a generator: no generator per message
                for part in parts:  # noqa: SIM110
                    if not part(attributes):
                        return False
                return True

            return conj

        def disj(attributes: Mapping[str, Any]) -> bool:
            for part in parts:  # noqa: SIM110  (as conj: no generator per message)
                if part(attributes):
                    return True
            return False

        return disj
    if isinstance(node, Not):
        inner = compile_node(node.item)
        return lambda attributes: not inner(attributes)
    value = node.value
    return lambda attributes: value


def _matcher(node: Node) -> _Matcher:
    """The compiled form of ``node`` (:func:`compile_node`), kept by identity as the
    trace encoder keeps its memo: the entry holds the node, so the id cannot be reused
    while it is there."""
    hit = _COMPILED.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    fn = compile_node(node)
    if len(_COMPILED) >= _COMPILED_MAX:
        _COMPILED.clear()
    _COMPILED[id(node)] = (node, fn)
    return fn


# -- tokenizer -----------------------------------------------------------------------------


@final
@attrs.frozen
class _Token:
    kind: str  # "(" ")" "*" "op" "str" "num" "ident" "kw" "end"
    value: Any
    pos: int


def _describe(tok: _Token) -> str:
    if tok.kind == "end":
        return "end of input"
    if tok.kind == "str":
        return f"string {tok.value!r}"
    return repr(str(tok.value)) if tok.kind != "num" else f"number {tok.value!r}"


_ESCAPES: Final = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t"}


def _tokenize(text: str) -> list[_Token]:
    """The tokens of ``text``, ending in an ``end`` token; a character no token can start
    with raises :class:`FilterSyntaxError` naming its position."""
    toks: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "()*":
            toks.append(_Token(ch, ch, i))
            i += 1
        elif ch in "=!<>":
            two = text[i : i + 2]
            if two in ("==", "!=", "<=", ">="):
                toks.append(_Token("op", two, i))
                i += 2
            elif ch in "<>":
                toks.append(_Token("op", ch, i))
                i += 1
            else:
                raise FilterSyntaxError(
                    text, i, "a comparison operator (== != < <= > >=)", repr(ch)
                )
        elif ch in "\"'":
            tok, i = _scan_string(text, i)
            toks.append(tok)
        elif ch.isdigit() or (
            ch in "-+." and i + 1 < n and (text[i + 1].isdigit() or text[i + 1] == ".")
        ):
            tok, i = _scan_number(text, i)
            toks.append(tok)
        elif ch.isalpha() or ch == "_":
            start = i
            while i < n and (text[i].isalnum() or text[i] in "_."):
                i += 1
            word = text[start:i]
            toks.append(_Token("kw" if word in KEYWORDS else "ident", word, start))
        else:
            raise FilterSyntaxError(text, i, "a comparison, 'not', '(' or a literal", repr(ch))
    toks.append(_Token("end", None, n))
    return toks


def _scan_string(text: str, start: int) -> tuple[_Token, int]:
    """The string literal opening at ``start`` (its quote) and the index after it."""
    quote, n = text[start], len(text)
    i = start + 1
    buf: list[str] = []
    while True:
        if i >= n:
            raise FilterSyntaxError(text, n, f"a closing {quote}", "end of input")
        c = text[i]
        if c == quote:
            return _Token("str", "".join(buf), start), i + 1
        if c == "\\":
            if i + 1 >= n or text[i + 1] not in _ESCAPES:
                found = "end of input" if i + 1 >= n else repr(text[i + 1])
                raise FilterSyntaxError(text, i + 1, "an escape (\\\\ \\\" \\' n t)", found)
            buf.append(_ESCAPES[text[i + 1]])
            i += 2
        else:
            buf.append(c)
            i += 1


def _digits(text: str, i: int) -> int:
    """The index after the run of digits at ``i``."""
    n = len(text)
    while i < n and text[i].isdigit():
        i += 1
    return i


def _scan_number(text: str, start: int) -> tuple[_Token, int]:
    """The number literal at ``start`` (an int, or a float with a point or an exponent) and
    the index after it."""
    n = len(text)
    i = _digits(text, start + 1 if text[start] in "-+" else start)
    is_float = False
    if i < n and text[i] == ".":
        is_float = True
        i = _digits(text, i + 1)
    if i < n and text[i] in "eE":
        j = i + 1
        if j < n and text[j] in "+-":
            j += 1
        if j < n and text[j].isdigit():
            is_float = True
            i = _digits(text, j)
    raw = text[start:i]
    try:
        num: int | float = float(raw) if is_float else int(raw)
    except ValueError:
        raise FilterSyntaxError(text, start, "a number", repr(raw)) from None
    if i < n and (text[i].isalnum() or text[i] == "_"):
        raise FilterSyntaxError(text, i, "an operator or the end of a number", repr(text[i]))
    return _Token("num", num, start), i


# -- parser ---------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self) -> _Token:
        return self.toks[self.i]

    def take(self) -> _Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def fail(self, expected: str) -> FilterSyntaxError:
        tok = self.peek()
        return FilterSyntaxError(self.text, tok.pos, expected, _describe(tok))

    def parse(self) -> Node:
        if self.peek().kind == "end":
            raise self.fail("an expression")
        node = self.or_expr()
        if self.peek().kind != "end":
            raise self.fail("'and', 'or' or the end of the filter")
        return node

    def or_expr(self) -> Node:
        items = [self.and_expr()]
        while self.peek().kind == "kw" and self.peek().value == "or":
            self.take()
            items.append(self.and_expr())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def and_expr(self) -> Node:
        items = [self.not_expr()]
        while self.peek().kind == "kw" and self.peek().value == "and":
            self.take()
            items.append(self.not_expr())
        return items[0] if len(items) == 1 else And(tuple(items))

    def not_expr(self) -> Node:
        tok = self.peek()
        if tok.kind == "kw" and tok.value == "not":
            self.take()
            return Not(self.not_expr())
        return self.primary()

    def primary(self) -> Node:
        tok = self.peek()
        if tok.kind == "(":
            self.take()
            node = self.or_expr()
            if self.peek().kind != ")":
                raise self.fail("')'")
            self.take()
            return node
        if tok.kind == "*":
            self.take()
            return Const(True)
        if tok.kind == "kw" and tok.value in ("true", "false"):
            self.take()
            return Const(tok.value == "true")
        if tok.kind == "ident":
            self.take()
            op = self.peek()
            if op.kind != "op":
                raise self.fail("a comparison operator (== != < <= > >=)")
            self.take()
            lit = self.peek()
            if lit.kind in ("str", "num"):
                self.take()
                return Cmp(tok.value, op.value, lit.value)
            if lit.kind == "kw" and lit.value in ("true", "false"):
                self.take()
                return Cmp(tok.value, op.value, lit.value == "true")
            raise self.fail("a literal (string, number, true or false)")
        raise self.fail("a comparison, 'not', '(', 'true', 'false' or '*'")


@final
@attrs.frozen(eq=False)
class Filter:
    """A parsed filter: ``text`` and its AST ``node``; :meth:`matches` evaluates it."""

    text: str
    node: Node

    def matches(self, attributes: Mapping[str, Any]) -> bool:
        node = self.node
        hit = _COMPILED.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1](attributes)
        return _matcher(node)(attributes)

    @property
    def match_all(self) -> bool:
        return isinstance(self.node, Const) and self.node.value

    def equality(self) -> tuple[str, Literal] | None:
        """``(attr, literal)`` when the filter is exactly ``attr == literal``, else None."""
        n = self.node
        if isinstance(n, Cmp) and n.op == "==":
            return (n.attr, n.literal)
        return None


_CACHE: dict[str, Filter] = {}


def parse_filter(text: str) -> Filter:
    """Parse ``text`` (see the module doc); raises :class:`FilterSyntaxError`."""
    if not isinstance(text, str):
        raise ProtocolMisuse(f"parse_filter: {text!r} is not a str; allowed: filter text")
    cached = _CACHE.get(text)
    if cached is not None:
        return cached
    f = Filter(text, _Parser(text).parse())
    if len(_CACHE) < 100_000:
        _CACHE[text] = f
    return f


MATCH_ALL: Final = Filter("true", Const(True))


def _key(value: Any) -> tuple[str, Any] | None:
    if isinstance(value, bool):
        return ("b", value)
    if _is_num(value):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    return None


def _insert(names: tuple[str, ...], name: str) -> tuple[str, ...]:
    """``names`` (sorted) with ``name`` inserted in order: one copy, no re-sort."""
    i = bisect_left(names, name)
    return (*names[:i], name, *names[i:])


@final
@attrs.frozen(kw_only=True)
class FilterIndex:
    """An immutable subscription index [GD §4.1]: equality subscriptions in hash buckets,
    match-all subscriptions in a list, the rest scanned. ``add``/``remove`` return new
    indexes; :meth:`match` returns the matching names, sorted."""

    filters: PMap[str, Filter] = attrs.field(factory=pmap)
    buckets: PMap[tuple[str, tuple[str, Any]], tuple[str, ...]] = attrs.field(factory=pmap)
    bucket_attrs: PMap[str, int] = attrs.field(factory=pmap)
    everyone: tuple[str, ...] = ()
    scanned: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.filters)

    @classmethod
    def build(cls, items: Iterable[tuple[str, Filter | str]]) -> FilterIndex:
        """An index of many ``(name, filter)`` pairs at once (later names replace earlier)."""
        filters: dict[str, Filter] = {}
        for name, filt in items:
            filters[name] = parse_filter(filt) if isinstance(filt, str) else filt
        buckets: dict[tuple[str, tuple[str, Any]], list[str]] = {}
        counts: dict[str, int] = {}
        everyone: list[str] = []
        scanned: list[str] = []
        for name in sorted(filters):
            f = filters[name]
            eq = f.equality()
            key = _key(eq[1]) if eq is not None else None
            if f.match_all:
                everyone.append(name)
            elif eq is not None and key is not None:
                buckets.setdefault((eq[0], key), []).append(name)
                counts[eq[0]] = counts.get(eq[0], 0) + 1
            else:
                scanned.append(name)
        return cls(
            filters=pmap(filters),
            buckets=pmap({k: tuple(v) for k, v in buckets.items()}),
            bucket_attrs=pmap(counts),
            everyone=tuple(everyone),
            scanned=tuple(scanned),
        )

    def add(self, name: str, filt: Filter | str) -> FilterIndex:
        f = parse_filter(filt) if isinstance(filt, str) else filt
        ix = self.remove(name) if name in self.filters else self
        eq = f.equality()
        key = _key(eq[1]) if eq is not None else None
        if f.match_all:
            return attrs.evolve(
                ix, filters=ix.filters.set(name, f), everyone=_insert(ix.everyone, name)
            )
        if eq is not None and key is not None:
            bkey = (eq[0], key)
            bucket = _insert(ix.buckets.get(bkey, ()), name)
            return attrs.evolve(
                ix,
                filters=ix.filters.set(name, f),
                buckets=ix.buckets.set(bkey, bucket),
                bucket_attrs=ix.bucket_attrs.set(eq[0], ix.bucket_attrs.get(eq[0], 0) + 1),
            )
        return attrs.evolve(ix, filters=ix.filters.set(name, f), scanned=_insert(ix.scanned, name))

    def remove(self, name: str) -> FilterIndex:
        f = self.filters.get(name)
        if f is None:
            return self
        filters = self.filters.remove(name)
        if name in self.everyone:
            return attrs.evolve(
                self, filters=filters, everyone=tuple(n for n in self.everyone if n != name)
            )
        if name in self.scanned:
            return attrs.evolve(
                self, filters=filters, scanned=tuple(n for n in self.scanned if n != name)
            )
        eq = f.equality()
        assert eq is not None
        key = _key(eq[1])
        bkey = (eq[0], key)
        bucket = tuple(n for n in self.buckets.get(bkey, ()) if n != name)  # type: ignore[arg-type]
        buckets = self.buckets.set(bkey, bucket) if bucket else self.buckets.remove(bkey)  # type: ignore[arg-type]
        count = self.bucket_attrs[eq[0]] - 1
        bucket_attrs = (
            self.bucket_attrs.set(eq[0], count) if count else self.bucket_attrs.remove(eq[0])
        )
        return attrs.evolve(self, filters=filters, buckets=buckets, bucket_attrs=bucket_attrs)

    def match(self, attributes: Mapping[str, Any]) -> tuple[str, ...]:
        """Names of the subscriptions ``attributes`` matches, sorted."""
        found: list[str] = list(self.everyone)
        parts = 1 if found else 0
        for attr in self.bucket_attrs:
            value = attributes.get(attr, _MISSING)
            if value is _MISSING:
                continue
            key = _key(value)
            if key is None:
                continue
            bucket = self.buckets.get((attr, key))
            if bucket:
                found.extend(bucket)
                parts += 1
        if self.scanned:
            hits = [n for n in self.scanned if self.filters[n].matches(attributes)]
            if hits:
                found.extend(hits)
                parts += 1
        if parts > 1:
            found.sort()
        return tuple(found)

    def any_match(self, attributes: Mapping[str, Any]) -> bool:
        """Whether any subscription matches (the disjunction an edge filter needs [GD §3.1])."""
        if self.everyone:
            return True
        for attr in self.bucket_attrs:
            value = attributes.get(attr, _MISSING)
            if value is not _MISSING:
                key = _key(value)
                if key is not None and (attr, key) in self.buckets:
                    return True
        return any(self.filters[n].matches(attributes) for n in self.scanned)
