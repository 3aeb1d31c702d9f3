"""proofrank: proof-quality proxies that correctness does not see (paper 5).

Five proxies of a proof's quality (conciseness, computational ease, cognitive simplicity,
diversity, adaptivity to a requested technique), each gated by correctness, are checked for
discriminant validity on perturbations of a corpus of human proofs written for the project, then
used to score proof generators behind one interface: retrieval of the corpus's proofs (best,
random, non-compliant at an injected rate, padded), small language models trained in the
workflow at several budgets and, at paper scale, local chat models judged by an LM.
Design choices, departures from the design card and tuning decisions: docs/studies/proofrank.md.
"""
