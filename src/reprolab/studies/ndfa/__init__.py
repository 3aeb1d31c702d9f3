"""ndfa: Nonlinear Direct Feedback Alignment (paper 18), the science part.

Modules: `data` (splits), `formats` (CIFAR pickle / SVHN .mat readers), `models` (block networks),
`feedback` (DFA, learned linear and nonlinear feedback, alignment), `train` (one run).

Methods: ``bp``; ``dfa`` (fixed random B_l); ``linfa`` (learned linear feedback started at DFA's
B_l); ``linfa_zero`` (the same started at zero); ``ndfa`` (nonlinear surrogate g_l per hidden
block, feedback J_{g_l}(h_l)ᵀ e, g_l trained online by a local loss). The output layer always
gets its true local gradient; every hidden block, the last one included (as in DFA), gets the
method's feedback at its output and backpropagates it only inside the block.

Design choices (the abstract is silent on all of them):
* Paired design: for one seed every method starts from the same weights, the same B_l and the
  same minibatch order; one optimiser (Adam, lr 3e-3 at smoke scale) for every method.
* B_l has entries N(0, 1/n_l) (card: 1/C), so e B_l has the scale of a Linear layer's gradient
  and a linear surrogate started at B_l outputs O(1) logits.
* NDFA's g_l = (linear skip started at B_l) + (nonlinear branch whose output layer starts at
  zero): Linear(n_l, 64) → tanh → Linear(64, C) for vectors; 1x1 conv → ReLU → GAP → Linear for
  feature maps. NDFA thus starts exactly as DFA (the card's "J_g ≈ B at init", made exact) and
  contains LinFA, so NDFA − LinFA isolates what the nonlinear branch adds.
* Surrogate loss: KL(softmax(ŷ) ‖ softmax(g_l(h_l))) with ŷ detached (``target: softmax``);
  ``logits`` (squared error) and a forward-mode Jacobian-matching term (``jvp_weight``) are
  options. Softmax targets ignore per-sample logit shifts, which never reach the feedback
  because e sums to zero. Surrogates use Adam, lr 1e-3.
* Alignment diagnostic: per hidden block, cosine (float64) between the method's feedback and
  BP's ∂L/∂h_l, both flattened over the whole evaluation batch (the first ``align_batch``
  training samples, eval mode), every epoch. It computes BP's gradient only to measure.

Tasks: ``digits`` (sklearn, stratified 70/30 split per seed, 3x256 tanh MLP) and the harder
``teacher``: 4000/2000 Gaussian inputs (16-d) labelled by the argmax of a fixed random tanh
teacher (16-32-10, gain 1; labels are imbalanced, majority class ≈ 22%), student 6x16 tanh.
Paper scale: CIFAR-10/100 and SVHN, ResNet-18 (CIFAR stem, stem folded into the first residual
block, feedback at each of the 8 residual block outputs), SGD 0.05, cosine, 100 epochs.

Prototype (scratch, tuning seeds 1000/1001 only; evaluation seeds are 0..4):
* Digits is too easy (card section 9 confirmed): at 20 epochs BP 96.67/97.41 vs DFA
  95.93/97.22, all methods 100% train accuracy.
* Wide students show no BP-DFA gap on teacher tasks (seed 1000; 6x64 student on a 32-d teacher:
  BP 62.95 vs DFA 63.95; 8x32: 65.75 vs 67.90), so the gap comes from narrow layers: with
  width 16 ≈ C, BP 65.25 vs DFA 58.70 (32-d teacher) and BP 70.20 vs DFA 61.80 (16-d teacher).
* Chosen regime (16-d teacher, 6x16 student, 30 epochs, batch 128), seeds 1000/1001: BP
  71.65/70.00, DFA 60.45/61.65, LinFA 70.05/69.75, LinFA-zero 65.95/63.80; NDFA targets:
  logits 69.30/67.90, logits+skip 69.65/69.30, softmax 70.25/67.50, softmax+skip 71.20/68.90
  (chosen: best mean). Surrogate lr 3e-4 70.65/69.50 (a tie), 3e-3 69.55/69.45: kept 1e-3.
* The Jacobian term (weight 1, seed 1000, 20 epochs) reached the highest alignment (.87-1.0)
  but not higher accuracy (69.40 vs 71.65) and costs ≈ 5x, so it is off at smoke scale.
* Training length matters for NDFA: at 20 epochs NDFA 66.50/63.60 < LinFA 67.25/67.35; at 120
  epochs (seed 1000) BP 75.05, NDFA 74.95, LinFA 72.20, DFA 68.50. Smoke uses 30 epochs, the
  most the ≈ 4 s per-run budget allows; the smoke table therefore tests the short-budget case.

Departures from the card: no LocalLoss row and no separate NDFA+JVP row (the study's method
list is the five above; the JVP term is an option); no TinyResNet/DeepNarrow-digits columns
(budget; the narrow student lives on the teacher task, the ResNet is built for paper scale and
only shape-tested here); the digits MLP trains 30 epochs at batch 128 and lr 3e-3 instead of 60
at 64 and 1e-3 (budget); 5 seeds instead of 3; no ViT or ImageNet configuration.
"""
