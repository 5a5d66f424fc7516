"""SAC (Haarnoja et al., 2018): the losses; the algorithm and config come with the off-policy issue."""
