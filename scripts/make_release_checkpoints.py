"""Writes tests/data/release-0.1.0/<trainer>/: a small ``checkpoint.pt`` of each trainer and its ``fixture.json``.

Each trainer (tiny networks) trains a few hundred steps on a stand-in scene through the in-process harness
(``envs.harness.train_in_process``: what ``mlagents-learn`` does, without Unity) and saves its checkpoint through
ML-Agents' model saver; ``fixture.json`` holds the behavior block (as in a YAML config), the scene, the seed and
the step, so a later version can load the file as ``mlagents-learn --resume`` does
(tests/test_release_checkpoints.py).  What each fixture is: tests/release_fixtures.py.

The committed files were written by the release code, commit ef92a78 (0.1.0), that checkout first on the path:

    git worktree add --detach /tmp/release ef92a78
    PYTHONPATH=/tmp/release .venv/bin/python scripts/make_release_checkpoints.py --code-commit ef92a78
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "release-0.1.0")
# After PYTHONPATH: the code under test comes from there; ``tests`` (a namespace package) takes the modules it lacks
# (``tests/release_fixtures.py``) from this checkout.
sys.path.append(ROOT)

from tests import release_fixtures as fixtures  # noqa: E402


def write(name: str, out_dir: str, code_commit: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        result = fixtures.train(name, tmp)
        target = os.path.join(out_dir, name)
        os.makedirs(target, exist_ok=True)
        source = os.path.join(fixtures.checkpoint_dir(tmp, result.behavior_name), fixtures.CHECKPOINT)
        shutil.copyfile(source, os.path.join(target, fixtures.CHECKPOINT))
    desc = fixtures.FIXTURES[name]
    fixture = {"settings": desc["settings"], "scene": desc["scene"], "behavior_name": result.behavior_name,
               "seed": fixtures.SEED, "step": int(result.steps), "code_commit": code_commit}
    with open(os.path.join(target, fixtures.FIXTURE_JSON), "w") as f:
        json.dump(fixture, f, indent=1, sort_keys=True)
        f.write("\n")
    size = os.path.getsize(os.path.join(target, fixtures.CHECKPOINT))
    print(f"{name}: step {fixture['step']}, {size} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code-commit", required=True, help="commit of the mlagents_plugins code on the path")
    parser.add_argument("--out", default=OUT)
    parser.add_argument("trainers", nargs="*", default=list(fixtures.FIXTURES))
    args = parser.parse_args()
    import mlagents_plugins

    print(f"mlagents_plugins from {os.path.dirname(mlagents_plugins.__file__)}")
    fixtures.register_plugins()
    for name in args.trainers:
        write(name, args.out, args.code_commit)


if __name__ == "__main__":
    main()
