"""nas (paper 15): Norm-Anchor Scaling for sequential locate-and-edit: a GPT-2 trained on a
synthetic world of facts, edited batch after batch by MEMIT and ROME with and without NAS (every
solved value vector rescaled to a norm measured on the unedited model), with the norms of the
edited weights and value vectors traced along the stream; at paper scale CounterFact or zsRE
edits of a local causal LM."""
