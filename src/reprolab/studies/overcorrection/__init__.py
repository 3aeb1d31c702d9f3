"""overcorrection (paper 8): over-corrective external information: trained readers of in-context
linear regression (linear attention, a small GPT-2) answer queries of a shifted world from items
chosen by similarity, MMR, theory-guided rules or an oracle, given in the prompt (ICL), by a
retriever (RAG) or from a key-value memory; the theory's predicted correction against the
measured one, and over- and under-correction rates against k."""
