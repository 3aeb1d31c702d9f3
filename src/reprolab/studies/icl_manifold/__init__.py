"""icl_manifold: in-context nonparametric regression on mixtures of manifolds (paper 16).

Prompts on circles, spheres and their mixtures; the oracle tangent local-polynomial estimator,
a two-stage attention network trained in context, an unstructured linear transformer and
classical baselines; error-rate slopes against the theory. Design choices, departures from the
design card and tuning decisions: docs/studies/icl_manifold.md.
"""
