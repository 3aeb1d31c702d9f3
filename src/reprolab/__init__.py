"""reprolab: deterministic reproductions of NeurIPS 2026 papers."""
