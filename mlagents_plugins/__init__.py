"""Trainer plugins for Unity ML-Agents 1.1.0 (fast_sac, taac, impala, muzero_repr).

Importing the package restores ML-Agents' TorchScript-based ONNX export (see ``onnx_export``), so that
checkpoints keep producing ``.onnx`` files Unity can run under torch >= 2.9.
"""
import mlagents_plugins_boot

# Normally the .pth file has done this at start-up; a process that imports us first (e.g. from a source
# checkout on PYTHONPATH) gets the import hooks here, before onnx_export imports mlagents.
mlagents_plugins_boot.boot()

from mlagents_plugins.onnx_export import install_onnx_export_fix  # noqa: E402

__version__ = "0.1.0"

install_onnx_export_fix()
