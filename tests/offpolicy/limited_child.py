"""Child process of ``test_replay_beyond_memory.py``: one in-process fast_sac run on ``camera36`` whose private memory
is capped by ``RLIMIT_DATA`` (set here, before anything is imported), printing a digest of the replay buffer at
every save and after a resume loads it, so the parent can compare what was saved with what came back.

    python tests/offpolicy/limited_child.py --limit-mb 640 --output DIR --storage disk --max-steps 4000 [--resume]
"""
import argparse
import hashlib
import os
import resource
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENE = "camera36"
RUN_ID = "limited"
BEHAVIOR = "Camera36"


def digest(replay) -> str:
    """SHA-256 of the counters, segment ids, priorities and every field of the filled rows, in ring order."""
    import numpy as np

    h = hashlib.sha256()
    h.update(np.array([replay.size, replay.write_pos, replay.total_added, replay.segment_counter]).tobytes())
    h.update(replay.segment_ids(np.arange(replay.size)).tobytes())
    if replay.prioritized:
        h.update(replay.priorities.priorities().tobytes())
    for start in range(0, replay.size, 4096):
        rows = replay.gather(np.arange(start, min(replay.size, start + 4096)))
        for name in sorted(rows):
            h.update(name.encode())
            h.update(np.ascontiguousarray(rows[name]).tobytes())
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit-mb", type=int, required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--storage", choices=("memory", "disk"), required=True)
    ap.add_argument("--max-steps", type=int, required=True)
    ap.add_argument("--buffer-size", type=int, default=200_000)
    ap.add_argument("--checkpoint-interval", type=int, default=1000)
    ap.add_argument("--steps-per-update", type=float, default=8.0)
    ap.add_argument("--num-areas", type=int, default=1)
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()
    limit = args.limit_mb << 20
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    sys.path.insert(0, REPO)

    from mlagents_plugins.envs.harness import train_in_process
    from mlagents_plugins.offpolicy.replay_store import ReplayStore

    save, open_ = ReplayStore.save, ReplayStore.open

    def save_and_report(self, replay, extra):
        save(self, replay, extra)
        print(f"REPLAY-SAVED step={extra['step']} rows={replay.size} digest={digest(replay)}", flush=True)

    def open_and_report(self, fields, prioritized):
        replay, extra = open_(self, fields, prioritized)
        if extra is not None:
            print(f"REPLAY-LOADED step={extra['step']} rows={replay.size} digest={digest(replay)}", flush=True)
        print(f"REPLAY-CAPACITY rows={replay.capacity} bytes={replay.nbytes} storage={replay.storage.kind}", flush=True)
        return replay, extra

    ReplayStore.save, ReplayStore.open = save_and_report, open_and_report
    config = {
        "trainer_type": "fast_sac",
        "hyperparameters": {"buffer_size": args.buffer_size, "batch_size": 32, "buffer_init_steps": 256,
                            "steps_per_update": args.steps_per_update, "save_replay_buffer": True,
                            "replay_storage": args.storage, "compile_update": False},
        "network_settings": {"hidden_units": 32, "num_layers": 1},
        "checkpoint_interval": args.checkpoint_interval,
        "summary_freq": args.checkpoint_interval,
        "time_horizon": 64,
    }
    result = train_in_process(config, SCENE, max_steps=args.max_steps, num_areas=args.num_areas,
                              output_dir=args.output, run_id=RUN_ID, resume=args.resume)
    print(f"RUN-DONE steps={result.steps}", flush=True)


if __name__ == "__main__":
    main()
