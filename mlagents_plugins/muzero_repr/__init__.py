"""``muzero_repr``: MuZero-style representation learning (learned model h, g, f) feeding an RL head (SAC)."""
