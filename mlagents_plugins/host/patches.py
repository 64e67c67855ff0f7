"""Every change this package makes to ML-Agents' own behaviour, in one list.

Installing the package changes a few things in ``mlagents-learn`` for every run, built-in trainers included
(the ``mlagents.stats_writer`` entry point in ``host.hook`` installs them at start-up).  Each change is a
``HostPatch`` below: what it replaces, why, the mlagents versions it was written against (any other version
is left alone, with a debug line), and the environment variable that switches it off (set it to ``1``).
docs/patches.md is the user-facing table of the same list.

``KERNEL_SWITCHES`` lists the other changes a reader should find here: faster kernels for the same math that
our own trainers apply to their own networks and updates (``fast_kernels``), never to ML-Agents' built-in
trainers' modules; they are not installed by the hook but checked, with the same guard, where they apply.
"""
import importlib
import logging
import os
from types import ModuleType
from typing import Any, Callable, Dict, Tuple

import attr

logger = logging.getLogger(__name__)


@attr.s(auto_attribs=True, frozen=True)
class HostPatch:
    name: str  # short id, used in logs
    target: str  # what in ML-Agents is replaced
    why: str  # one line: the fault it fixes
    installer: str  # "module:function" that installs it (idempotent; returns whether it is active)
    opt_out: str  # environment variable; "1" keeps ML-Agents' original behaviour
    versions: Tuple[str, ...] = ("1.1.0",)  # mlagents versions whose code the replacement mirrors
    # "attribute": ``target`` is a dotted attribute that the installer replaces (the module keeps ``ORIGINAL``).
    # "import": the installer puts a ``sys.meta_path`` finder in place that changes how the ``target`` modules
    # are imported (mlagents_plugins_boot; ``ORIGINAL`` maps module names to the specs they had).
    # "kernel": a faster kernel for the same math inside our own trainers (``KERNEL_SWITCHES``, not installed
    # by the hook); ``installer`` is the code that applies it and checks ``allowed``.
    # "process": a setting of the mlagents-learn process itself (``target`` names it), made once by the installer.
    # "compile": how torch.compile starts in processes of ours that compile (``KERNEL_SWITCHES``, not installed by
    # the hook): the same compiled code, reached with less start-up work.
    kind: str = "attribute"


PATCHES: Tuple[HostPatch, ...] = (
    HostPatch(
        name="onnx_export",
        target="mlagents.trainers.torch_entities.model_serialization.ModelSerializer.export_policy_model",
        why="torch >= 2.9 defaults to the dynamo exporter, which fails without onnxscript and writes graphs "
        "Unity cannot load; the replacement asks for the TorchScript exporter with mlagents' own contract",
        installer="mlagents_plugins.host.onnx_export:install_onnx_export",
        opt_out="MLAGENTS_PLUGINS_NO_ONNX_FIX",
    ),
    HostPatch(
        name="env_wait",
        target="mlagents.trainers.subprocess_env_manager.SubprocessEnvManager._step",
        why="the original busy-polls the step queue, taking a core from the environment; the replacement "
        "blocks on the queue with the same bookkeeping",
        installer="mlagents_plugins.host.env_wait:install_env_wait",
        opt_out="MLAGENTS_PLUGINS_SPIN_WAIT",
    ),
    HostPatch(
        name="worker_lifetime",
        target="mlagents.trainers.subprocess_env_manager.worker",
        why="environment workers outlive a killed trainer, keeping their port and build, so --resume fails with "
        "UnityWorkerInUseException; the replacement ends the worker and its build when the trainer dies",
        installer="mlagents_plugins.host.worker_lifetime:install_worker_lifetime",
        opt_out="MLAGENTS_PLUGINS_ORPHAN_WORKERS",
    ),
    HostPatch(
        name="inprocess_env",
        target="mlagents.trainers.learn.SubprocessEnvManager",
        why="at --num-envs 1 a worker process serves the build and pickles every step to the trainer, about 10% of "
        "a fast_sac step for no parallelism; the replacement steps the one environment in the trainer's process",
        installer="mlagents_plugins.host.inprocess_env:install_inprocess_env",
        opt_out="MLAGENTS_PLUGINS_ENV_WORKER",
    ),
    HostPatch(
        name="loopback_bind",
        target="mlagents_envs.rpc_communicator.RpcCommunicator.create_server",
        why="the trainer's unauthenticated gRPC server listens on every interface ([::]); the replacement binds "
        "localhost, where builds and the Editor connect",
        installer="mlagents_plugins.host.loopback_bind:install_loopback_bind",
        opt_out="MLAGENTS_PLUGINS_BIND_ALL",
    ),
    HostPatch(
        name="rpc_channel",
        target="mlagents_envs.rpc_communicator.UnityToExternalServicerImplementation.__init__",
        why="the gRPC thread and the environment worker's main thread pass every message through a multiprocessing "
        "Pipe, so each step's observations and actions are serialized and parsed twice more; the replacement "
        "hands the messages over in-process",
        installer="mlagents_plugins.host.rpc_channel:install_rpc_channel",
        opt_out="MLAGENTS_PLUGINS_RPC_PIPE",
    ),
    HostPatch(
        name="atomic_checkpoint",
        target="mlagents.trainers.model_saver.torch_model_saver.TorchModelSaver.save_checkpoint",
        why="checkpoint.pt is written in place, so a kill or a full disk mid-save leaves a truncated file and "
        "--resume fails; the replacement writes a temporary file and renames it over the old one",
        installer="mlagents_plugins.host.atomic_checkpoint:install_atomic_checkpoint",
        opt_out="MLAGENTS_PLUGINS_INPLACE_CHECKPOINTS",
    ),
    HostPatch(
        name="connect_errors",
        target="mlagents_envs.environment.UnityEnvironment._send_academy_parameters",
        why="an Editor that never presses Play gets a generic time-out about Behavior Type and graphics, a build "
        "that exits at start a bare return code; the replacement says which, on which port, and the build's log",
        installer="mlagents_plugins.host.connect_errors:install_connect_errors",
        opt_out="MLAGENTS_PLUGINS_PLAIN_CONNECT_ERRORS",
    ),
    HostPatch(
        name="status_json",
        target="mlagents.trainers.training_status.GlobalTrainingStatus.save_state",
        why="under numpy 2 the training status holds np.float32 checkpoint rewards, which json.dump refuses, so "
        "every run fails at its final checkpoint; the replacement writes numpy scalars as numbers",
        installer="mlagents_plugins.host.status_json:install_status_json",
        opt_out="MLAGENTS_PLUGINS_STATUS_JSON_ORIGINAL",
    ),
    HostPatch(
        name="deterministic_tanh",
        target="mlagents.trainers.torch_entities.distributions.TanhGaussianDistInstance.deterministic_sample",
        why="a tanh-squashed Gaussian (sac's policy) gives its unsquashed mean as the deterministic action, so "
        "Unity's deterministic inference and --deterministic act harder than the policy learned (clipped to [-1, 1]); "
        "the replacement gives tanh(mean)",
        installer="mlagents_plugins.host.deterministic_tanh:install_deterministic_tanh",
        opt_out="MLAGENTS_PLUGINS_UNSQUASHED_DETERMINISTIC",
    ),
    HostPatch(
        name="trainer_thread_crash",
        target="mlagents.trainers.trainer_controller.TrainerController.start_learning",
        why="an exception in a threaded: true trainer ends only its thread and the run hangs on the full trajectory "
        "queue, holding ports, builds and GPU; the replacement stops the run as on Ctrl+C and exits with the error",
        installer="mlagents_plugins.host.trainer_thread_crash:install_trainer_thread_crash",
        opt_out="MLAGENTS_PLUGINS_THREAD_CRASH_HANGS",
    ),
    HostPatch(
        name="trainer_thread_device",
        target="mlagents.trainers.trainer_controller.TrainerController.trainer_update_func",
        why="torch's default device is thread-local, so a threaded: true trainer thread makes its untyped tensors "
        "on the CPU beside --torch-device cuda parameters; the replacement binds the thread to that device first",
        installer="mlagents_plugins.host.trainer_thread_device:install_trainer_thread_device",
        opt_out="MLAGENTS_PLUGINS_THREAD_DEVICE_ORIGINAL",
    ),
    HostPatch(
        name="malloc_thresholds",
        target="glibc malloc's M_MMAP_THRESHOLD and M_TRIM_THRESHOLD in the mlagents-learn process",
        why="each update frees its temporaries and glibc hands the pages back to the OS, so the next update "
        "faults them in again (about 400 page faults per fast_sac step at 2x256); fixed thresholds keep them",
        installer="mlagents_plugins.host.malloc_thresholds:install_malloc_thresholds",
        opt_out="MLAGENTS_PLUGINS_MALLOC_DEFAULTS",
        kind="process",
    ),
    HostPatch(
        name="protobuf_descriptors",
        target="mlagents_envs.communicator_objects.*_pb2",
        why="the shipped modules build descriptors the way protobuf >= 4 refuses; on protobuf 4.21-6.x they are "
        "built from the serialized descriptors they embed, with the compiled backend (protobuf 3.20: untouched)",
        installer="mlagents_plugins_boot:install_protobuf_descriptors",
        opt_out="MLAGENTS_PLUGINS_PROTOBUF_ORIGINAL",
        kind="import",
    ),
    HostPatch(
        name="numpy_aliases",
        target="mlagents.trainers.buffer",
        why="the module annotates with np.float, removed in numpy 1.24, so it fails to import on numpy 2; on "
        "numpy >= 1.24 np.float is bound to float while (only while) the module body runs",
        installer="mlagents_plugins_boot:install_numpy_aliases",
        opt_out="MLAGENTS_PLUGINS_NUMPY_ORIGINAL",
        kind="import",
    ),
    HostPatch(
        name="entry_point_groups",
        target="mlagents.plugins.*",
        why="trainer_type / stats_writer index importlib.metadata.entry_points() as a dict of groups, removed in "
        "Python 3.12 (mlagents-learn dies before loading plugins); on 3.12+ they get a view that returns that dict",
        installer="mlagents_plugins_boot:install_entry_point_groups",
        opt_out="MLAGENTS_PLUGINS_ENTRY_POINTS_ORIGINAL",
        kind="import",
    ),
)



# Kind "kernel": ``installer`` names the code of ours that applies the switch (checking ``allowed(name)``).
KERNEL_SWITCHES: Tuple[HostPatch, ...] = (
    HostPatch(
        name="fused_swish",
        target="mlagents.trainers.torch_entities.layers.Swish modules inside our trainers' networks",
        why="replaced by FusedSwish (F.silu: the same x * sigmoid(x) in one kernel each way); no parameters, so "
        "checkpoints and the exported ONNX nodes are unchanged",
        installer="mlagents_plugins.common.fast_kernels:fuse_swish_",
        opt_out="MLAGENTS_PLUGINS_NO_FUSED_SWISH",
        kind="kernel",
    ),
    HostPatch(
        name="onednn_matmul",
        target="torch.set_float32_matmul_precision, process-wide, for the duration of our CPU updates",
        why="'medium' routes fp32 CPU matmuls to oneDNN, up to 2x faster on AVX-512 AMD processors; used only where "
        "a probe finds it exact to fp32 and timing finds it faster (per behavior: fast_cpu_matmul: false)",
        installer="mlagents_plugins.common.fast_kernels:MatmulKernelChooser",
        opt_out="MLAGENTS_PLUGINS_NO_ONEDNN_MATMUL",
        kind="kernel",
    ),
    HostPatch(
        name="isa_probe_memo",
        target="torch._inductor.cpu_vec_isa.VecISA._probe_load (torch 2.13) in processes that compile our steps",
        why="Inductor loads each vector-ISA test library in a fresh Python process in every process (ten on an AMX "
        "Xeon, 1.3-1.8 CPU s per run); a pass is recorded beside the library and not repeated for the same facts",
        installer="mlagents_plugins.common.compile_cache:remember_isa_probes",
        opt_out="MLAGENTS_PLUGINS_PROBE_ISA_EVERY_RUN",
        kind="compile",
    ),
    HostPatch(
        name="whole_step_cpp",
        target="Inductor's options for our compiled whole step on the CPU (cpp_wrapper, fallback_random)",
        why="the same generated kernels driven from C++ instead of a Python function, and the actor's noise drawn "
        "by ATen as in eager mode instead of per-element Philox in a fused kernel: 0.85-0.99x the update's CPU at 2x256, within the measurements' spread",
        installer="mlagents_plugins.common.compiled_step:whole_step_options",
        opt_out="MLAGENTS_PLUGINS_PY_WRAPPER",
        kind="kernel",
    ),
)

_BY_NAME: Dict[str, HostPatch] = {p.name: p for p in PATCHES + KERNEL_SWITCHES}


def mlagents_version() -> str:
    try:
        from mlagents.trainers import __version__
    except ImportError:
        return ""
    return __version__


def allowed(name: str) -> bool:
    """Whether patch (or kernel switch) ``name`` may be installed: not switched off, and written for the
    installed mlagents."""
    patch = _BY_NAME[name]
    if os.environ.get(patch.opt_out) == "1":
        logger.info("%s left as ML-Agents has it (%s=1)", patch.target, patch.opt_out)
        return False
    version = mlagents_version()
    if version not in patch.versions:
        logger.debug("patch %s not installed: mlagents %s is not one of %s", name, version, patch.versions)
        return False
    return True


def _installer(patch: HostPatch) -> Callable[[], bool]:
    module, function = patch.installer.split(":")
    return getattr(importlib.import_module(module), function)


def replace_attribute(name: str, owner: Any, attribute: str, replacement: Any, keeper: ModuleType) -> bool:
    """How every "attribute" patch is installed: ``owner.attribute`` becomes ``replacement`` once, if patch
    ``name`` is ``allowed``, and ML-Agents' original is kept as ``keeper.ORIGINAL`` (the installer's module,
    where the replacement and the tests find it).  Returns whether the patch is active."""
    if getattr(owner, attribute) is replacement:
        return True
    if not allowed(name):
        return False
    keeper.ORIGINAL = getattr(owner, attribute)
    setattr(owner, attribute, replacement)
    return True


def install(name: str) -> bool:
    """Install patch ``name`` alone if ``allowed`` (processes that load no trainer, e.g. a Ray environment
    copy, which needs only ``loopback_bind``); returns whether it is active."""
    return bool(_installer(_BY_NAME[name])())


def install_all() -> Dict[str, bool]:
    """Install every patch that ``allowed``; returns ``{name: active}``."""
    return {patch.name: bool(_installer(patch)()) for patch in PATCHES}
