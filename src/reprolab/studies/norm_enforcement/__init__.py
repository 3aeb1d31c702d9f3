"""norm_enforcement (paper 14): enforcement mechanisms that agents cannot exploit."""
