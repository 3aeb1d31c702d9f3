"""The rows of the nicer study and their kinds, in a module without torch, so that the summary
and the report (which must not load torch) can name them too.

Condensers (`condense.condense_slides`) are the table's rows but the last; ADAPTIVE rows choose
each slide's number of prototypes (DP-means), MATCHING rows refine their prototypes by
distribution matching; FULL trains on every tile.
"""

CONDENSERS = ("random", "kmeans", "gmm", "herding", "kmeans_dm", "dpmeans", "nicer")
ADAPTIVE = ("dpmeans", "nicer")
MATCHING = ("kmeans_dm", "nicer")
FULL = "full"
ROWS = (*CONDENSERS, FULL)
