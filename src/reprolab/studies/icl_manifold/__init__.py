"""icl_manifold: in-context nonparametric regression on mixtures of manifolds (paper 16).

Modules: `manifolds` (prompt generator, geodesic coordinates), `estimators` (oracle tangent
local-polynomial estimator, kNN, Nadaraya–Watson, ambient local-linear), `models` (the
two-stage attention network and the generic linear transformer), `train` (in-context training
on a prompt pool), `rates` (theory slope, log–log fit, bootstrap), `jobs` (one rule job: tune a
setting, evaluate a seed), `results` (table, claims, metrics.json).

Question: does the error of in-context predictors decay with the number n of in-context
examples at the intrinsic-dimension rate n^{-2α/(2α+d)} on prompts drawn from a mixture of
manifolds of different dimension and curvature, and does a transformer built as a geometric
preconditioner + local-polynomial solver track the oracle and beat unstructured and classical
alternatives?

Settings (D = 8, α = 3, J = 2 components unless growing; `manifolds`): circles (d = 1),
spheres (d = 2), mixture (one circle, one sphere), growing (circles and spheres, J_n =
max(2, ⌈log₂ n⌉ − 3), rates fitted against points per component n / J_n). n ∈ {32, …, 512}.
Rows: oracle_lp, twostage_tf (trained, 12 GD layers), twostage_exact (the same trained network
with a closed-form solve: the solver's approximation error), lintf (generic linear-attention
transformer, undertrained at this budget), knn, nw, ambient_ll. Each seed's job trains the
networks on its own pool (all settings, all n) and evaluates every method on 200 fresh prompts
× 4 queries per (setting, n); errors are against the noiseless target. The classical methods'
hyperparameters are chosen per setting on tuning-seed prompts (seed 1000), never on an
evaluation seed: the oracle's h₀ once per setting (its bandwidth follows the theory rule
h₀ n_c^{-1/(2α+d)}), kNN's k and the kernel bandwidths per n.

Design choices and departures from the card (section 9 of the card first):
* Targets: harmonic series from degree 2 (circles ℓ = 2..6, spheres ℓ = 2..4), built from
  Re(c (a·z)^ℓ) with complex null vectors a (exact spherical harmonics), each normalised to
  unit RMS, weights ℓ^{-(α+½)}, series scaled to unit mean square around a per-component
  N(0, 1) offset. With the card's targets ambient local-linear beat the oracle (card 9).
* Noise 1.0 (card 0.1; card 9 suggested 0.5): in scratch runs (tuning seeds 1000+) noise 0.5
  left the oracle's slopes at −1.2 to −1.4 on circles (theory −0.857), noise 1.0 brought them
  to −1.05 / −0.83 / −0.92 (circles / spheres / mixture, n = 32..1024, 300 prompts).
* Component count: fixed J = 2 for the rate settings, the growing rule as its own setting
  against points per component (card 9: the card's rule makes MSE jump when J grows).
* Oracle: geodesic (log-map) coordinates instead of a tangent projection, a bandwidth grown to
  reach 8 same-component points, and an adaptive local degree (the highest degree ≤ 2 whose
  coefficient count × 3 fits the kernel's effective sample size) — without the last, n = 32
  fits blew up (MSE 1–9 in scratch).
* Two-stage network: exact Gaussian kernels (softmax attention with a key-norm bias) instead
  of 128 random Fourier features (card 9: they fail the card's accuracy test and diverge);
  stage 1 takes the top-2 eigenvectors of the local covariance with soft weights λ/(λ + τh₁²)
  instead of the Newton–Schulz soft projector of all 8 directions (card 9); stage 2's
  bandwidth is e^{a} r_k^{b} with r_k the distance to the 16th nearest context point instead
  of h₀ n^{-b} (a rule in n alone cannot follow a component's share of the prompt or its
  radius: scratch runs showed a growing gap at large n); the solver runs on the centred
  problem (means by attention, then GD), 12 layers instead of 6 (6 layers left +40–60 % at
  n = 512 in scratch runs). 22 trainable numbers: a differentiable estimator tuned in context
  (card 9), trained 150 Adam steps (lr 0.05, 16 prompts × 8 queries) on a pool of 48 prompts
  per (setting, n). The card's 1500 steps and ~100k-parameter models do not fit the budget.
* The unstructured linear transformer (2 blocks, width 32, elu + 1 features, 17.5k
  parameters) gets 80 steps: it stays at predicting about the context mean (card 9 saw the
  same) and is labelled undertrained; its real training is the paper scale's.
* Dropped rows: softmax transformer and GP-RBF (budget; the card lists the softmax TF as
  paper-config only). Table columns: MSE at the smallest and largest n and the slope, per
  setting (the card's n = 128/256 columns are in metrics.json for every n).
* Claims use one fixed tolerance each: slope within 0.15 of theory; two-stage MSE within the
  card's 20 % of the oracle's at every n in the mixed setting.

Smoke results (evaluation seeds 0–4; read metrics.json for the current run): the oracle's
slopes are steeper than the theory (circles −1.08, spheres −0.87, mixture −0.96, growing −0.85
vs −0.857 / −0.75): pre-asymptotic, as card 9 found; within 0.15 only on spheres and growing.
Circles are steeper than spheres, as theory says. The trained two-stage network beats the
unstructured transformer and all three baselines at n = 512 in the mixture and is within
+0.2 % of the oracle there, but on one seed (2) its GD layers diverge at n = 32–64 (mixture
MSE 19.1 and 1.9 vs the oracle's 0.97 and 0.46), so the 20 %-at-every-n tracking claim fails;
the exact-solve ablation of the same trained network stays within −17 % … −3 % of the oracle
at every n: the gap is the GD solver's stability at small n, not the learned geometry. kNN's
slope is shallower than the oracle's (−0.74 vs −0.96).
"""
