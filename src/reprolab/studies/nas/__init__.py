"""nas: Norm-Anchor Scaling for sequential locate-and-edit (paper 15).

A small GPT-2 trained in the workflow on a synthetic world of subject–relation–object facts is
edited sequentially by MEMIT and ROME (locate-and-edit on the MLP value projections), each with
and without Norm-Anchor Scaling (every solved value vector rescaled to a norm measured on the
unedited model), with a tighter clamp and a random-direction control; the norms of the solved
vectors and of the edited weights are logged per batch and fitted for linear or exponential
growth. At paper scale the same editors read CounterFact or zsRE and edit a local causal LM.
Design choices, departures from the design card and tuning decisions: docs/studies/nas.md.
"""
