"""Issue 53: which validation scenes do the issue's new automatic settings change?

For every validation scene and behavior, with the defaults benchmark's drop-in configs (bench/plan.py
``minimal_config``: fast_sac and taac take MINIMAL_SAC and MINIMAL_NETWORK), print what each setting issue 53 made
automatic resolves to before (the rule each commit replaced, from its diff) and now (this checkout's settings
classes).  A row with every pair equal trains exactly as before, so its screen result cannot have moved.

    python bench/results/issue53-validation-2026-11-29/resolve.py
"""
import cattr

from bench.plan import minimal_config
from mlagents_plugins.envs.scenes import scene_behaviors, scenes_in
from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.taac.settings import TaacSettings


def action_sizes(scene_cls):
    """(continuous actions, discrete branches) of one behavior of a scene."""
    spec = scene_cls(seed=0).action_spec
    return spec.continuous_size, len(spec.discrete_branches)


def main() -> None:
    rows = []
    for scene in scenes_in("validation"):
        for part in scene_behaviors(scene):
            c, b = action_sizes(part)
            for trainer, cls in (("fast_sac", FastSACSettings), ("taac", TaacSettings)):
                if trainer == "taac" and b:
                    continue  # taac refuses discrete actions at start-up
                cfg = minimal_config(trainer)
                hp = cattr.structure(cfg["hyperparameters"], cls)
                units = int(cfg["network_settings"]["hidden_units"])
                if trainer == "fast_sac":
                    pairs = {
                        # fdd9bd3: before, null = on without discrete branches
                        "critic_layer_norm": (b == 0, hp.critics_layer_normed(b, units)),
                        # f33a3b7: before, critic_small_init defaulted to false; actor_min_q null = min with branches
                        "critic_small_init": (False, hp.critics_start_small(c, b)),
                        "actor_min_q": (b > 0, hp.actor_uses_min_q(b, c)),
                    }
                else:
                    pairs = {
                        # fdd9bd3: before, critic_layer_norm defaulted to true
                        "critic_layer_norm": (True, hp.critics_layer_normed(units)),
                        # 68c8000: before, mini_batch_length defaulted to 8
                        "mini_batch_length": (8, hp.window_length),
                    }
                changed = [k for k, (old, new) in pairs.items() if old != new]
                cells = ", ".join(f"{k} {old}->{new}" if old != new else f"{k} {new}" for k, (old, new) in pairs.items())
                rows.append((scene, part.__name__, trainer, f"{c}c {b}d", cells, "CHANGED" if changed else "same"))
    print("| scene | behavior | trainer | actions | resolved (before->now where they differ) | training |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
