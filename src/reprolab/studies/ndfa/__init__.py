"""ndfa: Nonlinear Direct Feedback Alignment (placeholder docstring, filled in at the end)."""
