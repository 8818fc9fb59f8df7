"""Gryphon's durable subscriptions [DUR], sans-IO, built on the guaranteed-delivery roles.

Checkpoint tokens, the release protocol (Tr <= Td), gap messages, the constream and catchup
streams of the subscriber hosting broker, and the persistent filtering subsystem (PFS) as pure
values and storage *effects*; real files and SQLite carry the effects out in
:mod:`gapless.models` (the world around the core). ``spec/durable.md`` maps the paper to the
modules.
"""
