"""normlift: lifting 2-D features onto 3-D Gaussians by normalised back-projection (paper 13).

NormLift (the closed-form normalised lift, its reliability calibrated by multi-view support,
mode voting) against render-side distillation, max-weight, weighted-average and kNN-averaged
lifting, with NormLift's ablations, on synthetic rooms of labelled Gaussians with CLIP-like
feature maps. Design choices, departures from the design card and tuning decisions:
docs/studies/normlift.md.
"""
