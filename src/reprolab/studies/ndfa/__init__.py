"""ndfa: Nonlinear Direct Feedback Alignment (paper 18), the science part.

BP, DFA, learned linear feedback and NDFA (a learned nonlinear surrogate per hidden block)
trained on the same splits and initial weights; `results` makes the table and claim checks.
Design choices, departures from the design card and tuning decisions: docs/studies/ndfa.md.
"""
