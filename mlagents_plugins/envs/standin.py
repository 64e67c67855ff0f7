"""A headless "Unity build" of a stand-in scene: the Unity side of ML-Agents' gRPC protocol.

Python (mlagents-learn / UnityEnvironment) is the gRPC server; this program is the client and calls the
single unary ``Exchange`` RPC for everything, exactly like Unity's RpcCommunicator:

1. first message: ``rl_initialization_output`` (name, communication version 1.5.0, package version,
   capabilities, log path); the reply carries ``rl_initialization_input`` (seed, num_areas, ...);
2. a header-only message; its reply is the first input (a RESET, with side channels);
3. from then on every request carries the output for the previous input (agent infos of every
   behavior ``Name?team=0`` of the scene - with their brain parameters in the first one - and stats
   side-channel data); the reply is the next input (side channels, then the STEP/RESET/QUIT command and
   actions per behavior).

Python closes by replying status 400 and stopping its server at once, so CANCELLED/UNAVAILABLE after
the handshake also means "closed": exit 0.  Every call has a deadline (``--timeout-wait``) and a lost
connection is retried a few times only, so a trainer that disappears never leaves this process hanging.
Launched by ``mlagents-learn`` (its environment names the trainer, ``process_lifetime.TRAINER_PID_ENV``), a thread
also watches the trainer and the worker that launched us and exits (code 3) within a second of either
ending - also when a half-dead worker still holds the port and would leave an exchange waiting for its
deadline.

``--write-builds DIR`` writes launchers ``DIR/<Behavior>.x86_64`` so ``mlagents-learn --env=DIR/Balance``
works unchanged.  ``--gym-env ID`` runs a Gymnasium task instead of a scene (``gym_env.py``, the ``gym`` extra);
with ``--write-builds DIR`` it writes that task's one launcher (``DIR/HalfCheetah.x86_64`` for HalfCheetah-v5).
"""
import argparse
import logging
import os
import shlex
import stat
import sys
import time
from typing import List, Optional, Tuple

import grpc
from mlagents_envs.communicator_objects.command_pb2 import QUIT, RESET, STEP
from mlagents_envs.communicator_objects.header_pb2 import HeaderProto
from mlagents_envs.communicator_objects.unity_message_pb2 import UnityMessageProto
from mlagents_envs.communicator_objects.unity_to_external_pb2_grpc import (
    UnityToExternalProtoStub,
)

from mlagents_plugins.envs.academy import Academy
from mlagents_plugins.envs.scenes import ALL_SCENES
from mlagents_plugins.envs.wire import (
    actions_from_protos,
    agent_info_protos,
    brain_parameters_proto,
)
from mlagents_plugins.util import process_lifetime
from mlagents_plugins.util.cli_args import number

COMMUNICATION_VERSION = "1.5.0"
PACKAGE_VERSION = "2.0.1"  # the com.unity.ml-agents release that speaks communication version 1.5.0
EDITOR_PORT = 5004
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # what the trainer accepts per message
RECONNECT_TRIES = 3
# Exit codes
EXIT_OK = 0
EXIT_CRASH = 1
EXIT_USAGE = 2
EXIT_TRAINER_LOST = 3
EXIT_INCOMPATIBLE = 4
EXIT_QUIT_AFTER_STEPS = 5

logger = logging.getLogger("mlagents_plugins.standin")
_LOG_ROOT = "mlagents_plugins"  # the stand-in routes every mlagents_plugins logger to -logFile

# Unity player arguments that are accepted and ignored: flags, and options taking one value.
UNITY_FLAGS = {"-nographics", "-batchmode", "-quit", "-popupwindow", "-no-stereo-rendering"}
UNITY_VALUE_OPTIONS = {"-logfile", "-monitor", "-window-mode", "-screen-width", "-screen-height",
                       "-screen-fullscreen", "-screen-quality", "-adapter"}
UNITY_FLAG_PREFIXES = ("-force-",)
UNITY_VALUE_PREFIXES = ("-screen-",)


class TrainerGone(Exception):
    """The trainer closed the connection (``clean``) or vanished / stopped answering."""

    def __init__(self, message: str, clean: bool = False):
        super().__init__(message)
        self.clean = clean


class IncompatibleTrainer(Exception):
    """The trainer speaks another major communication version."""


def split_unity_args(argv: List[str]) -> Tuple[List[str], Optional[str], List[str]]:
    """Separate Unity's own single-dash player arguments from ours.

    Returns (our arguments, the -logFile value or None, the Unity arguments that were ignored).  A
    single-dash argument Unity does not know is left for argparse to reject with a clear message.
    """
    ours: List[str] = []
    ignored: List[str] = []
    log_file: Optional[str] = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        low = arg.lower()
        if arg.startswith("--") or not arg.startswith("-") or low in ("-h",):
            ours.append(arg)
            i += 1
            continue
        if low in UNITY_FLAGS or low.startswith(UNITY_FLAG_PREFIXES):
            ignored.append(arg)
            i += 1
        elif low in UNITY_VALUE_OPTIONS or low.startswith(UNITY_VALUE_PREFIXES):
            value = argv[i + 1] if i + 1 < len(argv) else None
            if low == "-logfile":
                log_file = value
            ignored += [arg] + ([value] if value is not None else [])
            i += 2
        else:
            ours.append(arg)
            i += 1
    return ours, log_file, ignored


class _Parser(argparse.ArgumentParser):
    """argparse that also writes usage errors to the player log (mlagents hides our stderr)."""

    def error(self, message: str):
        logger.error(f"bad arguments: {message}")
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mlagents-plugins-scene",
        description="Headless stand-in for a Unity ML-Agents build (see docs/scenes.md).",
        allow_abbrev=False,
    )
    p.add_argument("--scene", type=str.lower, choices=sorted(ALL_SCENES), help="which scene to run")
    p.add_argument("--gym-env", metavar="ID", default=None,
                   help="run this Gymnasium task (e.g. HalfCheetah-v5) as one behavior instead of a scene "
                        "(needs the gym extra; docs/gym.md)")
    p.add_argument("--mlagents-port", type=number("--mlagents-port", int, low=1, high=65535), default=EDITOR_PORT,
                   help="port of the trainer's gRPC server (Unity's argument; default 5004, the editor port)")
    p.add_argument("--seed", type=int, default=None, help="scene seed (default: the seed sent by the trainer)")
    p.add_argument("--num-areas", type=number("--num-areas", int, low=1), default=None,
                   help="training areas (default: num_areas sent by the trainer, else 1)")
    p.add_argument("--decision-period", type=number("--decision-period", int, low=1), default=1,
                   help="physics ticks per decision, action held in between (Unity's DecisionRequester)")
    p.add_argument("--max-episode-steps", type=number("--max-episode-steps", int, low=1), default=None,
                   help="decisions before an episode times out (default: the scene's)")
    p.add_argument("--timeout-wait", type=number("--timeout-wait", low=0, low_inclusive=False, unit="seconds"), default=600.0,
                   help="deadline in seconds for each exchange with the trainer")
    p.add_argument("--connect-timeout", type=number("--connect-timeout", low=0, low_inclusive=False, unit="seconds"), default=60.0,
                   help="how long to wait for the trainer to start listening (editor mode)")
    p.add_argument("--step-cost-ms", type=number("--step-cost-ms", low=0, unit="milliseconds"), default=0.0,
                   help="benchmark aid: sleep this long in every STEP, as a heavy scene keeps its machine busy")
    p.add_argument("--quit-after-steps", type=number("--quit-after-steps", int, low=1), default=None,
                   help="testing aid: exit abruptly (code 5) after this many steps, like a crashed player")
    p.add_argument("--write-builds", metavar="DIR", default=None,
                   help="write launchers DIR/<Behavior>.x86_64 for every scene and exit")
    return p


def write_builds(directory: str) -> List[str]:
    """Write one executable launcher per scene (a group's too); each execs this interpreter on this module."""
    os.makedirs(directory, exist_ok=True)
    return [
        _write_launcher(os.path.join(directory, f"{cls.behavior_name}.x86_64"),
                        f"Headless stand-in for the Unity scene {cls.behavior_name}", f"--scene {name}")
        for name, cls in sorted(ALL_SCENES.items())
    ]


def _write_launcher(path: str, comment: str, module_args: str) -> str:
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    python = os.path.abspath(sys.executable)
    script = (
        "#!/bin/sh\n"
        f"# {comment} (written by mlagents-plugins-scene).\n"
        f"PYTHONPATH={shlex.quote(package_root)}${{PYTHONPATH:+:$PYTHONPATH}}\n"
        "export PYTHONPATH\n"
        f'exec {shlex.quote(python)} -m mlagents_plugins.envs.standin {module_args} "$@"\n'
    )
    with open(path, "w") as f:
        f.write(script)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def write_gym_build(directory: str, env_id: str) -> str:
    """Write the launcher ``DIR/<Behavior>.x86_64`` of one Gymnasium task (``mlagents-learn --env=DIR/<Behavior>``);
    the task's spaces are checked first, so a task the adapter cannot take fails here."""
    from mlagents_plugins.envs.gym_env import gym_scene

    name = gym_scene(env_id).behavior_name
    os.makedirs(directory, exist_ok=True)
    return _write_launcher(os.path.join(directory, f"{name}.x86_64"),
                           f"Headless Gymnasium task {env_id} as an ML-Agents build", f"--gym-env {shlex.quote(env_id)}")


class StandIn:
    """One scene connected to one trainer."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.channel = grpc.insecure_channel(
            f"localhost:{args.mlagents_port}",
            options=[("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                     ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)],
        )
        self.stub = UnityToExternalProtoStub(self.channel)
        self.academy: Optional[Academy] = None
        self.handshake_done = False

    def _exchange(self, message: UnityMessageProto, timeout: float, wait_for_ready: bool = False) -> UnityMessageProto:
        for attempt in range(RECONNECT_TRIES + 1):
            try:
                return self.stub.Exchange(message, timeout=timeout, wait_for_ready=wait_for_ready)
            except grpc.RpcError as err:
                code = err.code()
                if code == grpc.StatusCode.CANCELLED and self.handshake_done:
                    raise TrainerGone("the trainer closed the connection", clean=True)
                if code == grpc.StatusCode.UNAVAILABLE and attempt < RECONNECT_TRIES:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
                    # After the handshake this is how a closing trainer looks when our request was not
                    # in flight at the moment it stopped its server.
                    raise TrainerGone(
                        f"the trainer is not reachable on port {self.args.mlagents_port} ({code.name})",
                        clean=self.handshake_done,
                    )
                if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise TrainerGone(f"the trainer did not answer within {timeout:.0f} s")
                raise
        raise AssertionError("unreachable")

    def _init_message(self) -> UnityMessageProto:
        msg = UnityMessageProto(header=HeaderProto(status=200))
        init = msg.unity_output.rl_initialization_output
        init.name = "AcademySingleton"
        init.communication_version = COMMUNICATION_VERSION
        init.package_version = PACKAGE_VERSION
        init.log_path = os.path.abspath(self.args.log_file) if self.args.log_file not in (None, "-") else ""
        caps = init.capabilities
        caps.baseRLCapabilities = True
        caps.concatenatedPngObservations = True
        caps.compressedChannelMapping = True
        caps.hybridActions = True
        caps.trainingAnalytics = True
        caps.variableLengthObservation = True
        caps.multiAgentGroups = True
        return msg

    def handshake(self) -> UnityMessageProto:
        """Steps 1 and 2; returns the first input."""
        logger.info(f"connecting to the trainer on port {self.args.mlagents_port}")
        reply = self._exchange(self._init_message(), self.args.connect_timeout, wait_for_ready=True)
        if reply.header.status != 200:
            raise TrainerGone(f"the trainer refused the connection (status {reply.header.status})")
        init_in = reply.unity_input.rl_initialization_input
        major = init_in.communication_version.split(".")[0]
        if major != COMMUNICATION_VERSION.split(".")[0]:
            raise IncompatibleTrainer(
                f"incompatible communication version: trainer {init_in.communication_version}, "
                f"this scene {COMMUNICATION_VERSION}"
            )
        seed = self.args.seed if self.args.seed is not None else init_in.seed
        num_areas = self.args.num_areas or (init_in.num_areas if init_in.num_areas > 0 else 1)
        self.academy = Academy(
            self.args.scene_ref, num_areas=num_areas, seed=seed,
            max_episode_steps=self.args.max_episode_steps, decision_period=self.args.decision_period,
        )
        logger.info(
            f"trainer {init_in.package_version} (communication {init_in.communication_version}); "
            f"{self.args.scene_label}, seed {seed}, {num_areas} area(s), {self.academy.num_agents} agents "
            f"(behaviors: {', '.join(self.academy.behavior_specs)})"
        )
        self.handshake_done = True
        return self._exchange(UnityMessageProto(header=HeaderProto(status=200)), self.args.timeout_wait)

    def serve(self) -> int:
        """Run until the trainer closes; returns the exit code."""
        brain_parameters_sent = False
        reply = self.handshake()
        academy = self.academy
        if academy is None:
            raise RuntimeError("handshake finished without creating the scene")
        specs = academy.behavior_specs
        n_decisions = {name: 0 for name in specs}
        steps = 0
        started = False  # a STEP before the first RESET starts the scene, like Unity's first academy step
        while True:
            if reply.header.status != 200:
                logger.info(f"the trainer closed the environment (status {reply.header.status})")
                return EXIT_OK
            rl_in = reply.unity_input.rl_input
            academy.receive_side_channels(rl_in.side_channel)
            if rl_in.command == QUIT:
                logger.info("QUIT received")
                return EXIT_OK
            if rl_in.command == RESET or not started:
                infos = academy.reset()
                started = True
            elif rl_in.command == STEP:
                actions = {}
                for name, spec in specs.items():
                    sent = rl_in.agent_actions[name].value if name in rl_in.agent_actions else []
                    if len(sent) != n_decisions[name]:
                        logger.warning(f"{name}: expected actions for {n_decisions[name]} agents, got {len(sent)}; "
                                       "missing ones are zero")
                    actions[name] = actions_from_protos(sent, spec.action_spec, n_decisions[name])
                infos = academy.step(actions)
                if self.args.step_cost_ms:
                    time.sleep(self.args.step_cost_ms / 1000.0)
                steps += 1
                if self.args.quit_after_steps and steps >= self.args.quit_after_steps:
                    logger.warning(f"--quit-after-steps {self.args.quit_after_steps}: exiting abruptly")
                    os._exit(EXIT_QUIT_AFTER_STEPS)
            else:
                raise RuntimeError(f"unknown command {rl_in.command}")
            out = UnityMessageProto(header=HeaderProto(status=200))
            rl_out = out.unity_output.rl_output
            for name, spec in specs.items():
                n_decisions[name] = int((~infos[name].done).sum())
                rl_out.agentInfos[name].value.extend(agent_info_protos(infos[name], spec))
                if not brain_parameters_sent:
                    out.unity_output.rl_initialization_output.brain_parameters.append(
                        brain_parameters_proto(name, spec.action_spec)
                    )
            brain_parameters_sent = True
            rl_out.side_channel = academy.outgoing_side_channels()
            reply = self._exchange(out, self.args.timeout_wait)

    def close(self) -> None:
        self.channel.close()


def _setup_logging(log_file: Optional[str]) -> None:
    handler: logging.Handler
    if log_file and log_file != "-":
        os.makedirs(os.path.dirname(os.path.abspath(log_file)), exist_ok=True)
        handler = logging.FileHandler(log_file)
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s [%(levelname)s] %(message)s"))
    root = logging.getLogger(_LOG_ROOT)
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    root.propagate = False


def _exit_when_trainer_gone() -> None:
    """When launched by a trainer, exit as soon as it or our parent (its environment worker) is gone."""
    trainer = process_lifetime.trainer_from_environment()
    if trainer is None:
        return

    def gone(pid: int) -> None:
        who = "the trainer" if pid == trainer[0] else "the environment worker that launched this build"
        logger.error(f"stopping: {who} (pid {pid}) is gone")
        logging.shutdown()
        os._exit(EXIT_TRAINER_LOST)

    process_lifetime.watch_processes([trainer], gone, parent=os.getppid())


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, log_file, ignored = split_unity_args(argv)
    _setup_logging(log_file)
    parser = build_parser()
    args = parser.parse_args(ours)  # exits with code 2 and a clear message on bad arguments
    args.log_file = log_file
    if args.scene and args.gym_env:
        parser.error("--scene and --gym-env exclude each other: give one")
    if args.write_builds:
        if args.gym_env:
            try:
                print(write_gym_build(args.write_builds, args.gym_env))
            except (ImportError, ValueError) as err:  # the gym extra missing, or a task the adapter cannot take
                logger.error(str(err))
                return EXIT_USAGE
            return EXIT_OK
        for path in write_builds(args.write_builds):
            print(path)
        return EXIT_OK
    if not args.scene and not args.gym_env:
        parser.error(f"--scene is required (one of: {', '.join(sorted(ALL_SCENES))}) unless --gym-env or "
                     "--write-builds is given")
    if args.gym_env:
        from mlagents_plugins.envs.gym_env import gym_scene

        try:
            args.scene_ref, args.scene_label = gym_scene(args.gym_env), f"gym env {args.gym_env}"
        except (ImportError, ValueError) as err:
            logger.error(str(err))  # the player log is where mlagents-learn points a user
            return EXIT_USAGE
    else:
        args.scene_ref, args.scene_label = args.scene, f"scene {args.scene}"
    if ignored:
        logger.info(f"ignoring Unity player arguments: {' '.join(ignored)}")
    _exit_when_trainer_gone()
    standin = StandIn(args)
    try:
        return standin.serve()
    except TrainerGone as gone:
        code = EXIT_OK if gone.clean else EXIT_TRAINER_LOST
        (logger.info if code == EXIT_OK else logger.error)(f"stopping: {gone}")
        return code
    except IncompatibleTrainer as err:
        logger.error(str(err))
        return EXIT_INCOMPATIBLE
    except Exception:  # noqa: BLE001 - a crashed player must leave its reason in the log file
        logger.exception("the stand-in crashed")
        return EXIT_CRASH
    finally:
        standin.close()


if __name__ == "__main__":
    sys.exit(main())
