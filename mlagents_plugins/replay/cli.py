"""``mlagents-plugins-replay``: look into saved replay files without starting a trainer.

    mlagents-plugins-replay inspect FILE [--verify] [--json]

Exit codes: 0 ok, 1 bad/missing file (message on stderr), 2 usage error (argparse).
"""
import argparse
import datetime
import json
import sys
from typing import List, Optional

from mlagents_plugins.replay.errors import ReplayFileError
from mlagents_plugins.replay.persistence import inspect_replay

EXIT_OK = 0
EXIT_BAD_FILE = 1


def _human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return f"{n} B"


def format_info(info: dict) -> str:
    lines = [
        f"file:           {info['path']}",
        f"format version: {info['format_version']}",
        f"count:          {info['count']} rows",
        f"capacity:       {info['capacity']}",
        f"write_pos:      {info['write_pos']}",
        f"total_added:    {info['total_added']}",
        f"segments:       {info['segment_counter']}",
        f"prioritized:    {'yes' if info['prioritized'] else 'no'}",
        f"size on disk:   {info['bytes']} bytes ({_human_bytes(info['bytes'])})",
    ]
    storage = info.get("storage") or {}
    if storage.get("kind") == "disk":
        lines.append(f"storage:        disk, rows in {storage['folder']}/ ({storage['physical_rows']} physical rows, "
                     f"{storage['finals_slots']} segment finals)")
    if info.get("saved_unix") is not None:
        when = datetime.datetime.fromtimestamp(info["saved_unix"], tz=datetime.timezone.utc)
        lines.append(f"saved:          {when.isoformat(timespec='seconds')}")
    if info["verified"] is not None:
        lines.append(f"checksum:       {'OK' if info['verified'] else 'BAD'}")
    lines.append("fields:")
    width = max(len(n) for n in info["fields"])
    for name, spec in info["fields"].items():
        once = f"  (next row of {spec['next_of']}, stored once)" if spec.get("next_of") else ""
        lines.append(f"  {name:<{width}}  {spec['dtype']:<8} shape {tuple(spec['shape'])}{once}")
    if info["extra"]:
        lines.append("saved counters / metadata:")
        for key, value in info["extra"].items():
            text = json.dumps(value)
            if len(text) > 120:  # generator states: thousands of characters that tell a reader nothing
                text = f"{text[:60]}... ({len(text)} characters)"
            lines.append(f"  {key}: {text}")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mlagents-plugins-replay", description="Inspect replay buffer files saved by mlagents-plugins trainers."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_inspect = sub.add_parser("inspect", help="print count, capacity, field specs, size and saved counters")
    p_inspect.add_argument("file", help="replay file")
    p_inspect.add_argument("--verify", action="store_true", help="also read the payload and check the checksum")
    p_inspect.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args(argv)

    try:
        info = inspect_replay(args.file, verify=args.verify)
    except ReplayFileError as e:
        print(f"mlagents-plugins-replay: error: {e}", file=sys.stderr)
        return EXIT_BAD_FILE
    print(json.dumps(info, indent=2, sort_keys=True) if args.json else format_info(info))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
