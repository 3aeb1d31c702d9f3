"""strap: spatial→temporal adapter placement by a training-free boundary rule (paper 6).

Temporal sensitivity per block of a frozen image ViT picks a boundary b*: spatial adapters
before it, temporal adapters after it; against linear probe, spatial-all, temporal-all,
ST-Adapter and AIM placements on a motion task and an appearance control. Design choices,
departures from the design card and tuning decisions: docs/studies/strap.md.
"""
