"""The ``mlagents.stats_writer`` entry point of this package.

mlagents-learn loads every stats-writer plugin at start-up, before any trainer or environment manager is
created.  We use that hook to install the changes to ML-Agents listed in ``patches`` (each version-guarded,
each with its opt-out variable) for the built-in trainers as well as ours; we add no extra writer, so the
usual TensorBoard/console summaries stay exactly as ML-Agents writes them.
"""
from typing import List

from mlagents_plugins.host import patches
from mlagents_plugins.util import process_lifetime


def stats_writers(run_options) -> List:
    # The workers and the builds they launch inherit this: our stand-in builds watch the trainer through it.
    process_lifetime.mark_trainer_process()
    patches.install_all()
    return []
