"""Shared small networks built from `transformers` configs and torch (no downloads)."""
