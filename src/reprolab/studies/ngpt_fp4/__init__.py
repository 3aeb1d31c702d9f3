"""ngpt_fp4: is nGPT more robust to NVFP4 training than a standard GPT, and why (paper 12).

Character-level GPT and nGPT trained on Python's own docstrings in full precision and under
emulated NVFP4 (E2M1 elements, E4M3 block scales, per-tensor scale; Hadamard transform and
stochastic rounding; static scales) in all three GEMMs of every block linear layer; the
quantised dot products' SNR and correlations measured across hidden sizes. Design choices,
departures from the design card and tuning decisions: docs/studies/ngpt_fp4.md.
"""
