"""Trainer plugins for Unity ML-Agents 1.1.0 (fast_sac, taac, impala, muzero_repr).

Importing the package restores ML-Agents' TorchScript-based ONNX export (see ``onnx_export``), so that
checkpoints keep producing ``.onnx`` files Unity can run under torch >= 2.9.
"""
from mlagents_plugins.onnx_export import install_onnx_export_fix

__version__ = "0.1.0"

install_onnx_export_fix()
