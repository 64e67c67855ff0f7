"""ONNX export that Unity's inference engine can run, under any torch version.

Why: since torch 2.9 ``torch.onnx.export`` defaults to the dynamo exporter, which needs ``onnxscript``
and emits graphs (newer opsets, functions) that Unity's Sentis/Barracuda cannot load.  mlagents 1.1.0
calls ``torch.onnx.export`` without choosing, so every checkpoint and the final save fail with
"No module named 'onnxscript'" and the ``.onnx`` is lost.  We keep mlagents' own contract unchanged
(same opset ``SerializationSettings.onnx_opset``, input/output names, dynamic axes and version
constants, all taken from ``ModelSerializer``) and only ask for the TorchScript exporter.
"""
import inspect
import os
import sys

from mlagents.torch_utils import torch
from mlagents.trainers.settings import SerializationSettings
from mlagents.trainers.torch_entities import model_serialization
from mlagents.trainers.torch_entities.model_serialization import (
    ModelSerializer,
    exporting_to_onnx,
)
from mlagents_envs.logging_util import get_logger

logger = get_logger(__name__)

#: ML-Agents' own export, kept so a test can check the guards from the unpatched state.
ORIGINAL = ModelSerializer.__dict__["export_policy_model"]
_EXPORT_ACCEPTS_DYNAMO = "dynamo" in inspect.signature(torch.onnx.export).parameters


def torchscript_export_kwargs() -> dict:
    """Extra keyword arguments that select the TorchScript exporter on this torch version."""
    return {"dynamo": False} if _EXPORT_ACCEPTS_DYNAMO else {}


def export_policy_model(self: ModelSerializer, output_filepath: str) -> None:
    """Replacement for ``ModelSerializer.export_policy_model`` (same arguments, same file)."""
    onnx_output_path = f"{output_filepath}.onnx"
    tmp_path = f"{onnx_output_path}.tmp-{os.getpid()}"
    logger.debug(f"Converting to {onnx_output_path}")
    import warnings

    with exporting_to_onnx(), warnings.catch_warnings():
        # The legacy exporter warns that it is deprecated; it is the one Unity can read.
        warnings.simplefilter("ignore", category=DeprecationWarning)
        warnings.simplefilter("ignore", category=FutureWarning)
        torch.onnx.export(
            self.policy.actor,
            self.dummy_input,
            tmp_path,
            opset_version=SerializationSettings.onnx_opset,
            input_names=self.input_names,
            output_names=self.output_names,
            dynamic_axes=self.dynamic_axes,
            **torchscript_export_kwargs(),
        )
    # Rename into place so that a crash mid-export never leaves a truncated .onnx behind.
    os.replace(tmp_path, onnx_output_path)
    logger.info(f"Exported {onnx_output_path}")


def install_onnx_export() -> bool:
    """Installer of patch ``onnx_export`` (``patches.PATCHES``): idempotently route mlagents' ONNX export
    through the TorchScript exporter; returns whether it is.  Called by the mlagents-learn hook
    (``host.hook``), never on import of the package."""
    from mlagents_plugins.host import patches

    return patches.replace_attribute(
        "onnx_export", model_serialization.ModelSerializer, "export_policy_model", export_policy_model,
        sys.modules[__name__],
    )
