"""ntm: normalizing trajectory models, few-step generation by exact trajectory likelihood
(paper 10).

A reverse chain whose every step is a conditional normalizing flow (an invertible transporter
to a Gaussian predicted from the noisier states), trained by the exact likelihood of
forward-chain trajectories, against flow matching (Euler), Gaussian reverse steps and
consistency distillation on 2-D benchmarks; its last step self-distilled into a light denoiser.
Design choices, departures from the design card and tuning decisions: docs/studies/ntm.md.
"""
