"""The SAC head shared by ``fast_sac`` and ``muzero_repr``'s RL head: settings (``settings``), networks (``networks``:
twin Q, temperatures, the training-time action sampler), pure losses (``losses``), the optimizer core (``head``:
``SACHead``) and batch sampling from the replay buffer (``batch``).  No trainer package is imported here."""
