"""Trace-only invariants of durable subscriptions [DUR §2-3]: Tr <= Td, the L rule, gap
legality and exactly-once across disconnections."""
