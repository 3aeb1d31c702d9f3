"""vngct: visual-necessity-gated continual instruction tuning (VNG-CT) of a multimodal model.

A tiny LLaVA, aligned once on captions, tuned through the SynthCIT stream with SeqFT, a frozen
visual path, a matched random gate, EWC and VNG-CT (with and without calibration); a local
LLaVA-1.5 with LoRA at paper scale. Design choices, departures from the design card and tuning
decisions: docs/studies/vngct.md.
"""
