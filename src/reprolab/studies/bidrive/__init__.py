"""bidrive: normalizing-flow trajectory planning with exact-likelihood selection, bidirectional
distillation and latent optimisation (paper 11).

Synthetic driving scenes with multimodal experts, an autoregressive-flow teacher distilled into
a one-pass coupling-flow student, selection by exact likelihood, latent optimisation under
differentiable safety and dynamics costs, against constant velocity, regression and flow
matching, scored by a synthetic PDMS. Design choices, departures from the design card and
tuning decisions: docs/studies/bidrive.md.
"""
