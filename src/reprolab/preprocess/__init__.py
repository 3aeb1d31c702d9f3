"""Preprocessing families: one package per kind of raw data (slides, videos, streams)."""
