"""Diagnostic probe (issue 52), not product code: muzero_repr's tiny cases with the latent's per-sample min-max
scaling (MuZero App. G, ``networks.min_max_scale``, on h's output and every dynamics output) replaced for the whole
process by another map, to test whether the scaling's loss of the latent's magnitude is what the failing seeds share.

    PYTHONPATH=CHECKOUT python latent_scaling_probe.py MODE OUT_JSONL -- TINY_ARGS...

MODE: ``tanh`` (bounded, keeps sign and magnitude) or ``none`` (the linear output as is).  Each record gets
``"latent_scaling": MODE`` and is appended to OUT_JSONL.
"""
import json
import os
import sys
import tempfile


def main() -> None:
    mode, out, rest = sys.argv[1], sys.argv[2], sys.argv[4:]
    from mlagents.torch_utils import torch

    from mlagents_plugins.envs import tiny
    from mlagents_plugins.muzero_repr import networks

    maps = {"tanh": torch.tanh, "none": lambda x: x}
    if mode not in maps or sys.argv[3] != "--":
        raise SystemExit(f"usage: latent_scaling_probe.py {{{','.join(maps)}}} OUT -- TINY_ARGS")
    networks.min_max_scale = maps[mode]
    fd, tmp = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    tiny.main(rest + ["--out", tmp, "--jobs", "1"])
    with open(tmp) as f, open(out, "a") as g:
        for line in f:
            rec = json.loads(line)
            rec["latent_scaling"] = mode
            g.write(json.dumps(rec) + "\n")
    os.remove(tmp)


if __name__ == "__main__":
    main()
