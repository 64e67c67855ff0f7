"""TAAC: Temporally Abstract Actor-Critic (Yu, Xu, Zhang, NeurIPS 2021) as an ML-Agents trainer plugin."""
