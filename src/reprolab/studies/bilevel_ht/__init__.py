"""bilevel_ht: decentralised stochastic bilevel optimisation under heavy-tailed noise (paper 19).

Per-feature regularisation of logistic regression over gossiping nodes, with Gaussian,
Student-t and Pareto oracle noise; D-SGD, D-STORM, clipping, normalised momentum and the
normalised variance-reduced method. Design choices, departures from the design card and
tuning decisions: docs/studies/bilevel_ht.md.
"""
