"""ssg: Sparse Support Grounding MIL with unbalanced optimal transport (paper 7), the study package.

Gated ABMIL grounded by the source mass that unbalanced transport retains against a bank of
label-consistent supports, against pooling, attention, CLAM-SB-lite, TransMIL-lite and two
grounding ablations, on SynthMIL, EndoSeq and bags from synthetic whole slides. Design
choices, departures from the design card and tuning decisions: docs/studies/ssg.md.
"""
