"""The ``mlagents.stats_writer`` entry point of this package.

mlagents-learn loads every stats-writer plugin at start-up, before any trainer or environment manager is
created.  We use that hook to install the ONNX export fix (importing ``mlagents_plugins`` does it) and the
environment-wait fix (``env_wait_fix``: no busy polling for environment steps) for the built-in trainers as
well as ours; we add no extra writer, so the usual TensorBoard/console summaries stay
exactly as ML-Agents writes them.
"""
from typing import List

import mlagents_plugins  # noqa: F401  (installs the ONNX export fix)
from mlagents_plugins.env_wait_fix import install_env_wait_fix
from mlagents_plugins.onnx_export import install_onnx_export_fix


def stats_writers(run_options) -> List:
    install_onnx_export_fix()
    install_env_wait_fix()
    return []
