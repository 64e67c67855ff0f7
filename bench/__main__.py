"""``python -m bench <command>``: the one entry point of the benchmarks (bench/README.md).

Each command is a function ``main(argv) -> exit code`` in its module, with its own ``--help``; only the chosen
command's module is imported, so ``python -m bench --help`` answers without loading torch or mlagents.
"""
import importlib
import sys
import warnings
from typing import List, Optional, Tuple

#: command -> (module, function, one line for the command list)
COMMANDS: Tuple[Tuple[str, str, str, str], ...] = (
    ("learn", "bench.learn", "main_learn",
     "our trainers vs built-in sac/ppo on the stand-in scenes, seeds, mlagents-learn runs and the speed section "
     "(make bench, make bench-quick)"),
    ("defaults", "bench.learn", "main_defaults",
     "every trainer with one minimal drop-in config on the validation scenes; REPORT.md with the README table "
     "(make bench-defaults)"),
    ("speed", "bench.speed", "main",
     "update speed against minimal loops and built-ins, mlagents-learn env steps/s, protobuf stacks, replay "
     "save/load (modes: all, update, learn, proto, camera, gpu, gemm-floor, compile-options)"),
    ("profile", "bench.profiling", "main",
     "CPU seconds per 1k env steps of a whole mlagents-learn run by phase, every trainer against sac and "
     "the no-network floor (make bench-profile)"),
    ("replay", "bench.replay_io", "main",
     "replay buffer bytes per transition, sampling speed, save/load/verify seconds (vector or 84x84x3 camera)"),
    ("ray", "bench.ray_scaling", "main",
     "environment-copy scaling: RayEnvManager against ML-Agents' SubprocessEnvManager (make bench-ray)"),
    ("latent-probe", "bench.latent_probe", "main",
     "what muzero_repr's latent holds (linear probes), what its critic ranks, where the representation's "
     "gradient comes from, after an in-process run on a reach_continuous scene"),
    ("holding", "bench.holding", "main",
     "long in-process runs per seed: does a trainer hold what it learns (steps to threshold, best, final, dips)"),
    ("gym-split", "bench.profiling.gym_split", "main",
     "where a Gymnasium run's CPU goes: by process (trainer, environment worker, build) and the trainer by phase, "
     "one profiled mlagents-learn run per agent count"),
    ("gym", "bench.gym", "main",
     "our trainers and built-in sac on Gymnasium MuJoCo tasks through mlagents-learn, SB3 SAC and CrossQ beside "
     "them, evaluation of each checkpoint ONNX, the published anchors (needs requirements/bench-gym.txt)"),
)


def usage() -> str:
    width = max(len(c[0]) for c in COMMANDS)
    lines = ["usage: python -m bench <command> [options]   (python -m bench <command> --help for its options)",
             "", "Benchmarks of the mlagents-plugins trainers against ML-Agents' built-in trainers.", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, _, _, text in COMMANDS]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated")  # mlagents' own import
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    found = {c[0]: c for c in COMMANDS}.get(argv[0])
    if found is None:
        print(f"python -m bench: unknown command {argv[0]!r}; allowed: {', '.join(c[0] for c in COMMANDS)}\n",
              file=sys.stderr)
        print(usage(), file=sys.stderr)
        return 2
    _, module, function, _ = found
    code = getattr(importlib.import_module(module), function)(argv[1:])
    return code if isinstance(code, int) else 0  # some commands return their result (a dict) for callers


if __name__ == "__main__":
    sys.exit(main())
