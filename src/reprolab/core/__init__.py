"""Shared machinery every study uses: params, determinism, atomic I/O, tables, claims,
provenance, reports and the index."""
