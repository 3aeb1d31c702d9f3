"""pem: Predictive Entropy Maximization for blind source separation (paper 9).

Online PEM (local error-driven and Hebbian lateral updates) against PEM-batch, the det-max
reference, CorInfoMax, NSM and FastICA on correlated box and simplex sources. Design choices,
departures from the design card and tuning decisions: docs/studies/pem.md.
"""
