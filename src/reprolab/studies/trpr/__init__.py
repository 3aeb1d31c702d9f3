"""trpr: trust-region routing projection for MoE adapters in class-incremental learning (paper 4).

A frozen ViT carries MoE adapters whose routers drift as tasks arrive; TRPR projects each
image's routing onto a KL ball around a class anchor (exactly, by bisection on the dual) and
fuses it with the instance's own routing through a learned gate. Against replay-free PEFT
baselines on a stream where task identity is ambiguous, with the drift analysis per instance.
Design choices, departures from the design card and tuning decisions: docs/studies/trpr.md.
"""
