"""When the Editor or a build never connects, the error says which, on which port, and where to look.

ML-Agents 1.1.0 waits ``--timeout-wait`` seconds (default 60) for the Unity side's first message in
``UnityEnvironment._send_academy_parameters``.  If nobody presses Play in the Editor it raises the generic
"The Unity environment took too long to respond" (about Behavior Type and graphics, not about the Editor); if the
build exits at start it says "Environment shut down with return code N" without naming the build or its log.
The replacement calls ML-Agents' method unchanged and only rewrites those two errors (same exception types, so
ML-Agents' handling - closing the port, restarting workers - is unchanged), keeping the original text.
``MLAGENTS_PLUGINS_PLAIN_CONNECT_ERRORS=1`` keeps ML-Agents' messages (``patches`` lists it).
"""
import os
import sys

from mlagents_plugins.host import patches

#: ML-Agents' own ``UnityEnvironment._send_academy_parameters`` once replaced (kept so a test can check the guards)
ORIGINAL = None


def _player_log(env) -> str:
    """The build's log file, as ``UnityEnvironment._executable_args`` chose it ("" if none)."""
    args = list(env._additional_args)
    lowered = [a.lower() for a in args]
    if "-logfile" in lowered:
        i = lowered.index("-logfile") + 1
        return args[i] if i < len(args) else ""
    return os.path.join(env._log_folder, f"Player-{env._worker_id}.log") if env._log_folder else ""


def send_academy_parameters_explained(self, init_parameters):
    """``UnityEnvironment._send_academy_parameters`` of ML-Agents 1.1.0 with errors that name the cause."""
    from mlagents_envs.exception import UnityEnvironmentException, UnityTimeOutException

    try:
        return ORIGINAL(self, init_parameters)
    except UnityTimeOutException as err:
        if self._process is None:
            raise UnityTimeOutException(
                f"No Unity Editor connected on port {self._port} within {self._timeout_wait} s. Press Play in the "
                "Editor after mlagents-learn prints 'Listening on port', or pass --env=<build> to launch a build; "
                f"--timeout-wait sets how long to wait.\n(ML-Agents: {err})"
            ) from err
        log = _player_log(self)
        raise UnityTimeOutException(
            f"The build started for worker {self._worker_id} did not connect on port {self._port} within "
            f"{self._timeout_wait} s" + (f"; its log is {log}" if log else "") + f".\n(ML-Agents: {err})"
        ) from err
    except UnityEnvironmentException as err:
        process = self._process
        if process is None or process.poll() is None:
            raise
        log = _player_log(self)
        raise UnityEnvironmentException(
            f"The build {process.args[0] if isinstance(process.args, list) else process.args} exited with code "
            f"{process.returncode} before connecting on port {self._port}"
            + (f"; its log is {log}" if log else "") + f".\n(ML-Agents: {err})"
        ) from err


def install_connect_errors() -> bool:
    """Replace ``UnityEnvironment._send_academy_parameters`` (once); returns whether the patch is active."""
    try:
        from mlagents_envs.environment import UnityEnvironment
    except ImportError:
        return False
    return patches.replace_attribute("connect_errors", UnityEnvironment, "_send_academy_parameters", send_academy_parameters_explained, sys.modules[__name__])
