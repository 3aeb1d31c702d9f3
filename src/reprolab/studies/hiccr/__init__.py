"""hiccr (paper 3): hierarchical credit reassignment for multimodal RL with verifiable rewards:
token-level weights for visually grounded tokens and trajectory-level weights for visually
engaged rollouts, on GRPO and Dr. GRPO, with the policy's visual grounding measured before and
after RL, on a tiny LLaVA warm-started on the VisArith stream."""
