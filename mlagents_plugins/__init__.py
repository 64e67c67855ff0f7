"""Trainer plugins for Unity ML-Agents 1.1.0 (fast_sac, taac, impala, muzero_repr).

Importing the package changes nothing in ML-Agents: the changes listed in ``patches`` are installed by the
``mlagents.stats_writer`` entry point (``host.hook``) when mlagents-learn starts, or by
``patches.install_all()`` / ``patches.install(name)`` in a process that trains without mlagents-learn (the
in-process harness does).  The one exception are the import hooks of ``mlagents_plugins_boot`` below, which
must be in place before mlagents is imported (each checks its own opt-out variable and mlagents version).
"""
import mlagents_plugins_boot

# Normally the .pth file has done this at start-up; a process that imports us first (e.g. from a source
# checkout on PYTHONPATH) gets the import hooks here, before anything of ours imports mlagents.
mlagents_plugins_boot.boot()

__version__ = "0.2.0"
