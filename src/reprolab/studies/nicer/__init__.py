"""nicer (paper 17): condensing each slide's tile features into a weighted prototype set with
slide-adaptive capacity (DP-means) refined by distribution matching (MMD), against fixed-K
condensers at the same average budget, with a gated ABMIL trained on the condensed sets."""
