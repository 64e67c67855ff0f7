"""Names of the statistics TAAC reports (TensorBoard / console)."""
CRITIC_LOSS = "Losses/Critic Loss"
ACTOR_LOSS = "Losses/Policy Loss"
TEMPERATURE_LOSS = "Losses/Temperature Loss"
ACTION_TEMPERATURE = "Policy/Action Temperature"
SWITCH_TEMPERATURE = "Policy/Switch Temperature"
# beta(b=0) of the freshly sampled switch on replayed states.
KEEP_PROBABILITY = "Policy/Keep Probability"
# Q(s, tau_hat) - Q(s, tau^-) on replayed states (after b1_advantage_clipping).
PROPOSAL_ADVANTAGE = "Policy/Proposal Advantage"
# Mean length (steps) of the trajectories the rollout executed before switching.
MEAN_REPEAT_LENGTH = "Policy/Mean Repeat Length"
# Fraction of rollout steps that kept tau^- (b = 0).
ROLLOUT_KEEP_FRACTION = "Policy/Rollout Keep Fraction"
LEARNING_RATE = "Policy/Learning Rate"
# 1 while the updates train the critics alone (critic_warmup_updates), reported only when that is set.
CRITIC_WARMUP = "Policy/Critic Warm-up"
