"""``--set KEY.PATH=VALUE`` overrides of a behavior's settings, shared by ``bench gym``, ``bench learn`` and
``bench defaults``: parsed as a key path and a YAML value, set into a behavior's config dictionary."""
import argparse
import copy
from typing import Any, Dict, List, Sequence, Tuple

import yaml


def parse_override(text: str) -> Tuple[List[str], Any]:
    """``--set KEY.PATH=VALUE`` -> (the key path, the value read as YAML): ``hyperparameters.adam_beta1=0.5``."""
    key, sep, value = text.partition("=")
    path = [part.strip() for part in key.strip().split(".")]
    if not sep or not all(path):
        raise argparse.ArgumentTypeError(f"--set {text!r}: KEY.PATH=VALUE, e.g. hyperparameters.adam_beta1=0.5")
    return path, yaml.safe_load(value)


def apply_override(cfg: Dict[str, Any], path: Sequence[str], value: Any) -> None:
    """Set ``cfg[path[0]][path[1]]... = value`` in a behavior's settings, creating the sections on the way."""
    node = cfg
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = copy.deepcopy(value)


def override_text(path: Sequence[str], value: Any) -> str:
    """The ``KEY.PATH=VALUE`` text of one override (its value as flow YAML)."""
    text = yaml.safe_dump(value, default_flow_style=True).strip()
    if text.endswith("\n..."):
        text = text[: -len("\n...")]
    return f"{'.'.join(path)}={text}"
