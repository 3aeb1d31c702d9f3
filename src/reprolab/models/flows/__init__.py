"""Normalizing-flow building blocks shared by the flow studies (conditional flows per reverse
step of a few-step sampler; a flow trajectory planner with an autoregressive teacher and a
one-pass student), written in plain torch.

The maintained flow library on PyPI, `zuko` 1.6, is a good library, but adding a dependency
changes the project's lock file, on which every DVC stage and every provenance record depends.
The studies need exact, seed-deterministic conditional transforms with explicit per-sample
log-determinants, which a few hundred tested lines give: `base` (the transform interface,
chains, inversion and the flow with its standard-normal base), `spline` (the rational-quadratic
spline as functions), `elementwise` (the affine and spline maps that couplings and
autoregressive layers apply), `nets` (the conditioner MLP), `coupling`, `autoregressive` (MADE,
MAF) and `permutation`.
"""
