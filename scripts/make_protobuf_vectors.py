"""Writes tests/data/protobuf_vectors.json: ML-Agents' message modules as shipped, dumped under protobuf 3.20.

Run it with the Python 3.10/3.11 environment (protobuf 3.20, where mlagents-envs' own *_pb2 modules load):

    .venv/bin/python scripts/make_protobuf_vectors.py

tests/test_boot_hooks.py checks that whatever modules a process gets (the originals on protobuf 3.20, the
rebuilt ones on protobuf 4-6) have the same names and serialize every filled message to these bytes.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "protobuf_vectors.json")


def main() -> None:
    env = dict(os.environ, MLAGENTS_PLUGINS_PROTOBUF_ORIGINAL="1")
    env.pop("MLAGENTS_PLUGINS_PROTOBUF_REBUILD", None)
    raw = subprocess.run(
        [sys.executable, "-m", "mlagents_plugins.testing.protobuf_dump"],
        env=env, cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    dumped = json.loads(raw)
    if not dumped["protobuf"].startswith("3.20."):
        sys.exit(f"run this under protobuf 3.20 (the original modules); this environment has {dumped['protobuf']}")
    loaders = {m["loader"] for m in dumped["modules"].values()}
    if loaders != {"SourceFileLoader"}:
        sys.exit(f"expected mlagents-envs' own modules, got loaders {loaders}")
    with open(OUT, "w") as f:
        json.dump(dumped, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {OUT}: {len(dumped['modules'])} modules, protobuf {dumped['protobuf']} ({dumped['implementation']})")


if __name__ == "__main__":
    main()
