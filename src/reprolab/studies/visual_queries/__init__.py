"""visual_queries: vision-centric video evaluation — do models do worse when the query is visual?

The same multiple-choice items (frame retrieval, future prediction, causal memory distortion)
on synthetic sprite videos, asked with text and with visual options, answered by an oracle,
option-only baselines, a pixel heuristic, caption-then-reason and a small trained VLM. Design
choices, departures from the design card and tuning decisions: docs/studies/visual_queries.md.
"""
