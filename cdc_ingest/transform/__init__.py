"""Flink CDC's ``transform:`` rules: projections, filters and keys (docs/transform.md)."""
