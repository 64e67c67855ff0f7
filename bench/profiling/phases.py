"""Where the trainer process's CPU goes: a CPU-time sampling profiler with a fixed map from stack frames to phases.

**Sampling.**  ``PhaseSampler`` arms ``ITIMER_PROF``, which sends ``SIGPROF`` each time the process (all its
threads) has used ``interval_s`` more CPU.  Python runs the handler in the main thread at its next bytecode, with
the main thread's current frame; the handler reads the CPU clock of every Python thread and of the whole process,
and gives each thread's CPU since the last sample to the phase of that thread's stack now, and the rest of the
process's CPU (threads Python does not know: torch's intra-op pool, which only works inside an operator the main
thread called) to the main thread's phase.  Because samples come per CPU second used, not per wall second, a phase
gets samples in proportion to the CPU it uses: waiting (for the environment, on a queue) is never sampled, and
the total is exact (``time.process_time()`` deltas), only its split between phases is statistical.  CPU used
before the sampler started (interpreter start-up, the first imports) is start-up.

**Phases** (``PHASES``), from the stack, innermost frame first: any frame compiling with ``torch.compile``
(Dynamo's ``convert_frame``, Inductor's ``compile_fx``/``codecache``/``async_compile``) makes the sample
``compile`` (not the class bodies of those modules run while they are imported: frames inside Python's import
machinery name no whole-stack phase); then saving (``TrainerController._save_models``, a trainer's ``save_model``/``_maybe_save_model``,
the environment manager's ``close``, the run's closing ``write_*`` calls) makes it ``save``; creating trainers,
policies and networks (``TrainerController._create_trainer_and_manager``) or resetting the environment
(``TrainerController._reset_env``) makes it ``startup``.  Otherwise the *innermost* frame that names a phase
decides: ``_take_step`` of the environment manager (every policy's ``get_action`` for one step) is
``inference``; ``_process_trajectory`` (a trainer taking a trajectory into its buffer) ``intake``;
``_update_policy`` ``update``; the environment stepped in the trainer's own process (``inprocess_env``'s
``_env_step``: the build's gRPC exchange, side channels) ``env``, which the report adds to the environment
processes' CPU; ML-Agents' ``stats.py`` (``StatsReporter``, its writers), TensorBoard's writer and
``_maybe_write_summary``/``_update_end_episode_stats`` ``stats`` - innermost, so the stats a trainer records
inside its intake or update count as stats.  A stack with none of these is ``host`` (ML-Agents' trainer
controller, environment manager and agent processor) while the training loop runs, ``startup`` before its first
``TrainerController.advance`` and ``save`` after ``start_learning`` returns (``LoopState``).

``classify`` is a pure function of ``(file, function)`` pairs, tested on synthetic stacks
(tests/bench/test_bench_profile.py).
"""
import functools
import os
import signal
import sys
import threading
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

#: every phase of the trainer process, in report order
PHASES = ("host", "inference", "intake", "update", "stats", "startup", "compile", "save", "env")

#: (file path ending, function name or None for any): a frame that puts the whole sample in the phase
COMPILE_FRAMES = (
    ("torch/_dynamo/convert_frame.py", None),
    ("torch/_inductor/compile_fx.py", None),
    ("torch/_inductor/codecache.py", None),
    ("torch/_inductor/async_compile.py", None),
)
SAVE_FRAMES = (
    ("mlagents/trainers/trainer_controller.py", "_save_models"),
    (None, "save_model"),
    (None, "_maybe_save_model"),
    ("mlagents/trainers/subprocess_env_manager.py", "close"),
    ("mlagents_plugins/host/inprocess_env.py", "close"),
    ("mlagents/trainers/learn.py", "write_run_options"),
    ("mlagents/trainers/learn.py", "write_timing_tree"),
    ("mlagents/trainers/learn.py", "write_training_status"),
)
#: frames of Python's import machinery: frames inside one (a module's body, its class bodies) do not name the
#: whole-stack phases (importing torch._dynamo runs class bodies in convert_frame.py, which compile nothing)
IMPORT_FRAMES = "<frozen importlib._bootstrap"  # also _bootstrap_external
STARTUP_FRAMES = (
    ("mlagents/trainers/trainer_controller.py", "_create_trainer_and_manager"),
    ("mlagents/trainers/trainer_controller.py", "_reset_env"),
)
#: (file path ending or None, function name or None, phase): the innermost matching frame decides
INNER_FRAMES = (
    ("mlagents/trainers/subprocess_env_manager.py", "_take_step", "inference"),
    ("mlagents/trainers/env_manager.py", "_take_step", "inference"),
    ("mlagents_plugins/host/inprocess_env.py", "_take_step", "inference"),
    ("mlagents_plugins/host/inprocess_env.py", "_env_step", "env"),
    (None, "_process_trajectory", "intake"),
    (None, "_update_policy", "update"),
    ("mlagents/trainers/stats.py", None, "stats"),
    ("/tensorboard/", None, "stats"),
    (None, "_maybe_write_summary", "stats"),
    (None, "_update_end_episode_stats", "stats"),
)

Frame = Tuple[str, str]  # (file name, function name)


class LoopState:
    """Where the run is: before its training loop, in it, after it (set by the hook in ``child``)."""

    BEFORE, LOOP, AFTER = "before", "loop", "after"


def _matches(filename: str, function: str, path: Optional[str], name: Optional[str]) -> bool:
    if name is not None and function != name:
        return False
    if path is None:
        return True
    filename = filename.replace(os.sep, "/")
    return filename.endswith(path) if not path.startswith("/") else path in filename


@functools.lru_cache(maxsize=None)
def frame_kind(filename: str, function: str) -> Tuple[Optional[str], Optional[str]]:
    """(phase that takes the whole stack - compile, save, startup - or None; phase as the innermost naming frame
    or None) of one frame; cached per (file, function), so a sample costs a dict lookup per frame."""
    outer = None
    for phase, rules in (("compile", COMPILE_FRAMES), ("save", SAVE_FRAMES), ("startup", STARTUP_FRAMES)):
        if function == "<module>":  # a module being imported, not a call of its functions
            break
        if any(_matches(filename, function, path, name) for path, name in rules):
            outer = phase
            break
    inner = next((phase for path, name, phase in INNER_FRAMES if _matches(filename, function, path, name)), None)
    return outer, inner


def classify(frames: Sequence[Frame], state: str) -> str:
    """The phase of one stack (``frames`` innermost first) while the run is in ``state`` (``LoopState``)."""
    outer = set()
    inner = None
    for filename, function in frames:
        if filename.startswith(IMPORT_FRAMES):  # what ran inside it was a module being imported, not a call
            outer.clear()
        o, i = frame_kind(filename, function)
        if o is not None:
            outer.add(o)
        if inner is None:
            inner = i
    for phase in ("compile", "save", "startup"):
        if phase in outer:
            return phase
    if state == LoopState.BEFORE:
        return "startup"
    if state == LoopState.AFTER:
        return "save"
    return inner or "host"


def stack_of(frame) -> List[Frame]:
    """``(file, function)`` of ``frame`` and its callers, innermost first."""
    out = []
    while frame is not None:
        code = frame.f_code
        out.append((code.co_filename, code.co_name))
        frame = frame.f_back
    return out


class PhaseAccounts:
    """CPU seconds per phase, and the samples that made them (pure bookkeeping, no clocks)."""

    def __init__(self) -> None:
        self.cpu: Dict[str, float] = {p: 0.0 for p in PHASES}
        self.samples: Dict[str, int] = {p: 0 for p in PHASES}

    def add(self, phase: str, seconds: float, sample: bool = True) -> None:
        if phase not in self.cpu:
            raise ValueError(f"phase {phase!r} is unknown; allowed: {', '.join(PHASES)}")
        self.cpu[phase] += seconds
        if sample:
            self.samples[phase] += 1

    def total(self) -> float:
        return sum(self.cpu.values())


def split_sample(process_delta: float, thread_deltas: Dict[int, float], phases: Dict[int, str],
                 main: int) -> List[Tuple[str, float]]:
    """One sample's CPU by phase: each thread's own delta to its phase, the rest of the process's delta (threads
    Python does not know, e.g. torch's pool, working for the main thread's operator) to the main thread's phase.
    The parts add up to ``process_delta`` exactly."""
    parts = [(phases[t], d) for t, d in thread_deltas.items() if t in phases]
    known = sum(d for _, d in parts)
    parts.append((phases[main], process_delta - known))
    return parts


class PhaseSampler:
    """``SIGPROF`` every ``interval_s`` of process CPU; see the module docstring.  ``start``/``stop`` from the main
    thread.  ``state`` is a ``LoopState`` value, set by whoever knows where the run is."""

    def __init__(self, interval_s: float = 0.005, keep_stacks: int = 0,
                 process_clock: Callable[[], float] = time.process_time) -> None:
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("PhaseSampler must be created in the main thread (signal handlers run there)")
        self.interval_s = interval_s
        self.state = LoopState.BEFORE
        self.accounts = PhaseAccounts()
        self.keep_stacks = keep_stacks
        self.stacks: Dict[str, Dict[str, int]] = {p: {} for p in PHASES}  # phase -> stack signature -> samples
        self.handler_cpu_s = 0.0
        self._process_clock = process_clock
        self._last_process = 0.0
        self._last_thread: Dict[int, float] = {}
        self._clocks: Dict[int, int] = {}
        self._previous_handler = None
        self._running = False

    def start(self) -> None:
        """Count the CPU used so far as start-up and begin sampling."""
        self._last_process = self._process_clock()
        self.accounts.add("startup", self._last_process, sample=False)
        self._previous_handler = signal.signal(signal.SIGPROF, self._on_signal)
        signal.setitimer(signal.ITIMER_PROF, self.interval_s, self.interval_s)
        self._running = True

    def stop(self) -> None:
        """Stop sampling and give the CPU since the last sample to the phase of the stack now."""
        if not self._running:
            return
        signal.setitimer(signal.ITIMER_PROF, 0.0, 0.0)
        signal.signal(signal.SIGPROF, self._previous_handler or signal.SIG_DFL)
        self._running = False
        self.sample(sys._getframe(1))

    def _thread_cpu(self) -> Dict[int, float]:
        out = {}
        for thread in threading.enumerate():
            ident = thread.ident
            if ident is None:
                continue
            try:
                clock = self._clocks.get(ident)
                if clock is None:
                    clock = self._clocks[ident] = time.pthread_getcpuclockid(ident)
                out[ident] = time.clock_gettime(clock)
            except (OSError, AttributeError):  # the thread ended between enumerate and the clock read
                self._clocks.pop(ident, None)
        return out

    def _on_signal(self, signum, frame) -> None:
        t0 = time.thread_time()
        self.sample(frame)
        self.handler_cpu_s += time.thread_time() - t0

    def hide_from_compiler(self, disable: Callable[[Callable], Callable]) -> None:
        """Re-install the signal handler wrapped in ``disable`` (``torch.compiler.disable``), once torch is imported.

        A signal handler runs in the main thread between two bytecodes of whatever runs there, also inside a call
        of a ``torch.compile``d function, where TorchDynamo intercepts every Python frame that starts: it would try
        to compile the handler's frames, spending compile time the run does not have, and inside a ``fullgraph``
        function (fast_sac's whole-step graph) the attempt raises and the trainer falls back to a slower path.
        The wrapper's frame is TorchDynamo's own, which it skips, and it runs the handler with compiling off."""
        if self._running:
            signal.signal(signal.SIGPROF, disable(self._on_signal))

    def sample(self, main_frame) -> None:
        """Attribute the CPU used since the last sample (see ``split_sample``)."""
        now = self._process_clock()
        process_delta, self._last_process = now - self._last_process, now
        threads = self._thread_cpu()
        deltas = {t: c - self._last_thread.get(t, c) for t, c in threads.items()}
        self._last_thread = threads
        main = threading.main_thread().ident
        frames = sys._current_frames()
        phases: Dict[int, str] = {}
        for ident, delta in deltas.items():
            if ident == main or delta > 0.0:
                stack = stack_of(main_frame if ident == main else frames.get(ident))
                phases[ident] = classify(stack, self.state)
                if self.keep_stacks and (ident == main or delta > 0.0):
                    self._remember(phases[ident], stack)
        phases.setdefault(main, classify(stack_of(main_frame), self.state))
        for phase, seconds in split_sample(process_delta, {t: d for t, d in deltas.items() if t in phases}, phases,
                                           main):
            self.accounts.add(phase, seconds)

    def _remember(self, phase: str, stack: Sequence[Frame]) -> None:
        """Count a short signature of the stack (its 6 innermost frames) under its phase, for checking the map."""
        signature = " < ".join(f"{os.path.basename(f)}:{n}" for f, n in stack[:6])
        counts = self.stacks[phase]
        counts[signature] = counts.get(signature, 0) + 1

    def top_stacks(self) -> Dict[str, List[Tuple[str, int]]]:
        """Per phase, the ``keep_stacks`` most sampled stack signatures."""
        return {p: sorted(c.items(), key=lambda kv: -kv[1])[: self.keep_stacks] for p, c in self.stacks.items() if c}


# ---------------------------------------------------------------------------------------------- other processes
def _proc_stat(pid: int) -> Optional[Tuple[int, float]]:
    """(parent pid, CPU seconds of the process and of its children it waited for) from /proc/<pid>/stat."""
    from mlagents_plugins.util.process_lifetime import proc_stat_fields

    fields = proc_stat_fields(pid)
    if fields is None:
        return None
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return int(fields[1]), (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def descendants(root: int, pids: Optional[Iterable[int]] = None) -> Dict[int, Tuple[float, str]]:
    """{pid: (CPU seconds, command line)} of every living descendant of ``root`` (from /proc)."""
    stats = {}
    for pid in pids if pids is not None else (int(p) for p in os.listdir("/proc") if p.isdigit()):
        st = _proc_stat(pid)
        if st is not None:
            stats[pid] = st
    children: Dict[int, List[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out[pid] = (stats[pid][1], _cmdline(pid))
        todo += children.get(pid, [])
    return out


def role(pid: int, cmdline: str, env_workers: Iterable[int]) -> str:
    """What a child process of the trainer is: ``build`` (the stand-in), ``env_worker`` (ML-Agents' environment
    worker), ``compile`` (an Inductor compile worker) or ``other``."""
    if "mlagents_plugins.envs.standin" in cmdline:
        return "build"
    if pid in set(env_workers):
        return "env_worker"
    if "torch._inductor" in cmdline or "compile_worker" in cmdline:
        return "compile"
    return "other"


def cpu_by_role(snapshot: Dict[int, Tuple[float, str]], env_workers: Iterable[int]) -> Dict[str, float]:
    out = {"build": 0.0, "env_worker": 0.0, "compile": 0.0, "other": 0.0}
    workers = list(env_workers)
    for pid, (cpu, cmdline) in snapshot.items():
        out[role(pid, cmdline, workers)] += cpu
    return out
