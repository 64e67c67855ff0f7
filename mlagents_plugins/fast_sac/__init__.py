"""``fast_sac``: Soft Actor-Critic with twin Polyak-averaged critics, n-step returns and optional PER."""
