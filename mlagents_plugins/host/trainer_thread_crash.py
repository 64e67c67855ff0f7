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
wrapper logs the trainer's exception, records it and interrupts the main thread, which then raises
``KeyboardInterrupt`` where it is, and ML-Agents handles that as Ctrl+C (trainer threads joined, models saved).
Then the recorded exception is raised as ``TrainerThreadError``, so mlagents-learn exits with status 1 and both
tracebacks.  An exception raised while the run is already stopping (``kill_trainers`` set) is recorded and raised
the same way, without the interrupt.  ``MLAGENTS_PLUGINS_THREAD_CRASH_HANGS=1`` keeps ML-Agents' method
(``patches`` lists it).

The interrupt is a real signal sent to the main thread (``pthread_kill``), so that it also ends a blocking wait
there (the full queue's ``put``), with a handler of our own installed for the run: SIGINT's handler cannot be
relied on, since a process started in the background of a non-interactive shell inherits SIGINT ignored and Python
then installs none (seen: the run still hung).  The signal is SIGUSR1, unless the program handles it itself;
where no handler can be installed (not the main thread, no SIGUSR1 on Windows) ``_thread.interrupt_main`` is the
fallback, which works only where SIGINT is handled and does not end a blocking wait.
"""
import _thread
import logging
import signal
import sys
import threading
from typing import List, Tuple

from mlagents.trainers.exception import UnityTrainerException

from mlagents_plugins.host import patches

logger = logging.getLogger(__name__)

#: ML-Agents' own ``TrainerController.start_learning`` once replaced
ORIGINAL = None


class TrainerThreadError(UnityTrainerException):
    """A trainer running on its own thread (``threaded: true``) raised; the run was stopped because of it."""


INTERRUPT_SIGNAL = getattr(signal, "SIGUSR1", None)


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt(f"a trainer thread raised (signal {signum})")


#: what ``install_interrupt_handler`` returns where it installed nothing
NOT_INSTALLED = object()


def install_interrupt_handler():
    """Install the handler that turns ``INTERRUPT_SIGNAL`` into ``KeyboardInterrupt``; returns the previous
    disposition to restore, or ``NOT_INSTALLED`` (no such signal, not the main thread, or the program handles the
    signal itself)."""
    if INTERRUPT_SIGNAL is None or threading.current_thread() is not threading.main_thread():
        return NOT_INSTALLED
    previous = signal.getsignal(INTERRUPT_SIGNAL)
    if previous not in (signal.SIG_DFL, signal.SIG_IGN):
        return NOT_INSTALLED
    signal.signal(INTERRUPT_SIGNAL, _raise_keyboard_interrupt)
    return previous


def interrupt_main_thread(handler_installed: bool) -> None:
    """Make the main thread raise ``KeyboardInterrupt``, also out of a blocking wait (see the module's docstring)."""
    if handler_installed:
        signal.pthread_kill(threading.main_thread().ident, INTERRUPT_SIGNAL)
    else:
        _thread.interrupt_main()


def start_learning_stopping_on_thread_errors(self, env_manager) -> None:
    """``TrainerController.start_learning`` of ML-Agents 1.1.0, ended by an exception in a trainer thread."""
    errors: List[Tuple[str, BaseException]] = []
    learning = [True]  # cleared before the handler is restored: a thread that fails later signals nothing
    advance_trainer = self.trainer_update_func

    def trainer_update_func(trainer) -> None:
        try:
            advance_trainer(trainer)
        except BaseException as err:
            name = getattr(trainer, "brain_name", type(trainer).__name__)
            errors.append((name, err))
            logger.error("The trainer of %s (threaded: true) raised %s; stopping the run.", name,
                         type(err).__name__, exc_info=err)
            if learning[0] and not self.kill_trainers:
                interrupt_main_thread(previous_handler is not NOT_INSTALLED)

    previous_handler = install_interrupt_handler()
    self.trainer_update_func = trainer_update_func  # read by the threads start_learning creates
    try:
        ORIGINAL(self, env_manager)
    finally:
        learning[0] = False
        del self.trainer_update_func
        if previous_handler is not NOT_INSTALLED:
            signal.signal(INTERRUPT_SIGNAL, previous_handler)
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
