"""IMPALA (Espeholt et al. 2018, arXiv 1802.01561) with V-trace off-policy correction for ML-Agents.

Layout: ``losses`` (pure tensor math), ``settings`` (hyperparameters), ``pieces`` (trajectory -> fixed
length unrolls and their batching), ``policy`` (LeanPolicy that records its version at acting time),
``optimizer`` (owns the losses), ``trainer`` (intake, batching, cadence), ``plugin`` (entry point).
"""
