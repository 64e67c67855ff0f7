"""A ``threaded: true`` trainer that raises ends the run with that error, as a trainer on the main thread does.

ML-Agents 1.1.0 advances each ``threaded: true`` trainer in ``TrainerController.trainer_update_func``, on a thread of
its own; an exception there ends that thread and nothing else.  The main thread goes on stepping the environment
until the trajectory queue of the dead trainer is full and then waits on it for ever: the run prints nothing more,
never writes its final checkpoint and keeps its ports, its builds and (``--torch-device cuda``) the GPU until it
is killed.  (Seen on a GPU machine: muzero_repr's first update raised in its thread and mlagents-learn hung.)
With ``threaded: false`` the same exception leaves through ``start_learning``, whose ``finally`` saves the models,
and mlagents-learn exits with status 1.

The replacement of ``start_learning`` gives the threaded case that behaviour.  It runs ML-Agents' own method with
each trainer thread's target wrapped (the threads are created inside it, from ``self.trainer_update_func``): the
wrapper logs the trainer's exception, records it and interrupts the main thread with SIGINT, which ML-Agents
handles as Ctrl+C (trainer threads joined, models saved).  Then the recorded exception is raised as
``TrainerThreadError``, so mlagents-learn exits with status 1 and both tracebacks.  An exception raised while the
run is already stopping (``kill_trainers`` set) is recorded and raised the same way, without the interrupt.
``MLAGENTS_PLUGINS_THREAD_CRASH_HANGS=1`` keeps ML-Agents' method (``patches`` lists it).
"""
import _thread
import logging
import signal
import sys
import threading
from typing import List, Tuple

from mlagents.trainers.exception import UnityTrainerException

from mlagents_plugins import patches

logger = logging.getLogger(__name__)

#: ML-Agents' own ``TrainerController.start_learning`` once replaced
ORIGINAL = None


class TrainerThreadError(UnityTrainerException):
    """A trainer running on its own thread (``threaded: true``) raised; the run was stopped because of it."""


def interrupt_main_thread() -> None:
    """Deliver SIGINT to the main thread: a real signal also ends a blocking wait there (a full queue's ``put``),
    which ``_thread.interrupt_main`` alone would not (it only flags the signal)."""
    if hasattr(signal, "pthread_kill"):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    else:
        _thread.interrupt_main()


def start_learning_stopping_on_thread_errors(self, env_manager) -> None:
    """``TrainerController.start_learning`` of ML-Agents 1.1.0, ended by an exception in a trainer thread."""
    errors: List[Tuple[str, BaseException]] = []
    advance_trainer = self.trainer_update_func

    def trainer_update_func(trainer) -> None:
        try:
            advance_trainer(trainer)
        except BaseException as err:
            name = getattr(trainer, "brain_name", type(trainer).__name__)
            errors.append((name, err))
            logger.error("The trainer of %s (threaded: true) raised %s; stopping the run.", name,
                         type(err).__name__, exc_info=err)
            if not self.kill_trainers:
                interrupt_main_thread()

    self.trainer_update_func = trainer_update_func  # read by the threads start_learning creates
    try:
        ORIGINAL(self, env_manager)
    finally:
        del self.trainer_update_func
    if errors:
        name, err = errors[0]
        raise TrainerThreadError(
            f"the trainer of behavior {name} (threaded: true) stopped with {type(err).__name__}: {err}. The run "
            "was stopped as on Ctrl+C (models saved at the step reached); fix the cause and continue with --resume."
        ) from err


def install_trainer_thread_crash() -> bool:
    """Replace ``TrainerController.start_learning`` (once); returns whether the patch is active."""
    from mlagents.trainers.trainer_controller import TrainerController

    return patches.replace_attribute("trainer_thread_crash", TrainerController, "start_learning",
                                     start_learning_stopping_on_thread_errors, sys.modules[__name__])
