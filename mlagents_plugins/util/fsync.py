"""Durable renames: the one helper both crash-safe writers (replay files, checkpoints) use."""
import os


def fsync_dir(directory: str) -> None:
    """fsync ``directory`` so a rename into it survives a power loss; a no-op where directories cannot be
    opened (the rename itself is still atomic there)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
