"""Render ``spec/gd.md``'s map of GD rules to code from the dispatch table.

``python benchmarks/gd_rule_map.py --write`` replaces the part of ``spec/gd.md`` between the
generated markers with :func:`gapless.impl.gd.rulemap.render`; ``--check`` (the default) exits
1 and says so if the committed page differs (``tests/unit/test_gd_rooms.py`` checks the same).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gapless.impl.gd.rulemap import BEGIN, END, render

PAGE = Path(__file__).resolve().parent.parent / "spec" / "gd.md"


def splice(page: str, generated: str) -> str:
    """``page`` with its generated part replaced by ``generated`` (markers included)."""
    head, sep, rest = page.partition(BEGIN)
    if not sep or END not in rest:
        raise SystemExit(f"{PAGE}: the markers {BEGIN!r} ... {END!r} are missing")
    tail = rest.split(END, 1)[1]
    return head + generated.rstrip("\n") + tail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite spec/gd.md")
    args = ap.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    new = splice(page, render())
    if args.write:
        PAGE.write_text(new, encoding="utf-8")
        print(f"wrote {PAGE}")
        return 0
    if new != page:
        print(f"{PAGE} is out of date: run python benchmarks/gd_rule_map.py --write")
        return 1
    print(f"{PAGE} is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
