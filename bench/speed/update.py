"""Update throughput of every trainer of ours against a minimal hand-written PyTorch loop of the same
algorithm and size (the practical ceiling), and against the built-in counterpart where there is one.

One process, torch threads 1 and 2 in turn (``torch.set_num_threads``), same objects at both.  Each trainer
is built from ``configs/<trainer>_balance.yaml`` exactly as ``mlagents-learn`` would (balance scene: 8 vector
observations, 2 continuous actions), its buffer filled with random trajectories through its own
``_process_trajectory``, and one "update" is its real full update:

* ``fast_sac`` / ``taac`` / ``muzero_repr``: ``update_once()`` - sample from our replay buffer, build the
  batch, the optimizer's step(s) (muzero_repr: one model update + one SAC head update);
* ``impala``: the pieces of one batch enter the learner queue, ``_learn_on(take_fresh(batch_size))`` - pad
  and stack the pieces, V-trace learner step, policy-lag bookkeeping;
* built-in ``sac`` (for fast_sac; settings shared with fast_sac's config as in the main bench): the body of
  ``SACTrainer._update_sac_policy`` - ``sample_mini_batch``, reward-signal evaluation, ``optimizer.update``;
* built-in ``ppo`` (for impala; network as impala's, batch 256 = impala's 8 pieces x 32 steps): the body of
  ``OnPolicyTrainer._update_policy`` - ``make_mini_batch``, ``optimizer.update``,
  ``update_reward_signals``, with the buffer shuffled whenever a pass over it is complete.

The minimal loops (``bench/minimal_*.py``) read their sizes from the same ``TrainerSettings`` and make the
same number of backward passes; the JSON records both counts (measured by ``common.BackwardCounter``) and the
parameter count each update trains.  Timing: ``common.time_interleaved`` (median of 5 interleaved blocks).

Usage: ``python -m bench speed update [--updates K] [--rows R] [--threads 1 2] [--trainers ...] [--hidden-units H --num-layers L --batch-size B] [--json]``; the sizes, when given, replace every trainer's (built-ins too).

``--memory SIZE:SEQ_LEN [...]`` (``none`` for a case without memory) times fast_sac's ``update_once`` beside
built-in sac's update, both built with that ``network_settings.memory``, case after case in the one run, and
reports ms per update and us per step of the batch: per step sampled (built-in sac: ``batch_size /
sequence_length`` sequences of ``sequence_length`` steps, padding included; fast_sac: as many windows of
``burn_in + sequence_length`` rows) and per trained step (built-in sac: steps whose mask is 1; fast_sac: the
windows' rows in their chunk), counted on batches drawn outside the timing.  Both buffers hold random trajectories
cut at the config's ``time_horizon``.  No minimal loop in that mode.
"""
import argparse
import json
import math
import os
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from bench.speed import common

warnings.filterwarnings("ignore", message="pkg_resources is deprecated")

#: trainer of ours -> its built-in counterpart (measured in the same run), if any
BUILTIN_FOR = {"fast_sac": "sac", "impala": "ppo"}
TRAINERS = ("fast_sac", "taac", "impala", "muzero_repr")


class Bench:
    """The three update functions of one trainer and what they train."""

    def __init__(self, trainer: str, ours: Callable[[], None], minimal: Any, work: str,
                 ours_params: List, builtin: Optional[str] = None, builtin_step: Optional[Callable[[], None]] = None):
        self.trainer, self.ours, self.minimal, self.work = trainer, ours, minimal, work
        self.ours_params, self.builtin, self.builtin_step = ours_params, builtin, builtin_step

    def steps(self) -> Dict[str, Callable[[], None]]:
        out = {"ours": self.ours, "minimal": self.minimal.step}
        if self.builtin_step is not None:
            out["builtin"] = self.builtin_step
        return out


def backward_passes(step: Callable[[], None]) -> int:
    with common.BackwardCounter() as c:
        step()
    return c.calls


# ---------------------------------------------------------------------------------------------- built-ins
def builtin_sac_step(trainer, batch_size: int) -> Callable[[], None]:
    """One iteration of ML-Agents' ``OffPolicyTrainer._update_policy`` loop (built-in sac's update): with memory,
    ``batch_size / sequence_length`` sequences of ``sequence_length`` steps, as there."""
    from mlagents.trainers.buffer import RewardSignalUtil

    sequence_length = trainer.policy.sequence_length  # 1 without memory
    n_sequences = max(int(batch_size / sequence_length), 1)

    def step() -> None:
        batch = trainer.update_buffer.sample_mini_batch(batch_size, sequence_length=sequence_length)
        for name, signal in trainer.optimizer.reward_signals.items():
            batch[RewardSignalUtil.rewards_key(name)] = signal.evaluate(batch) * signal.strength
        trainer.optimizer.update(batch, n_sequences)

    return step


def builtin_ppo_step(trainer) -> Callable[[], None]:
    """One minibatch of ``OnPolicyTrainer._update_policy`` (shuffle amortised: once per pass)."""
    batch_size = trainer.hyperparameters.batch_size
    buf = trainer.update_buffer
    per_pass = buf.num_experiences // batch_size
    if per_pass < 1:
        raise ValueError(f"ppo update_buffer holds {buf.num_experiences} steps < batch_size {batch_size}")
    state = {"i": 0}

    def step() -> None:
        i = state["i"] % per_pass
        if i == 0:
            buf.shuffle(sequence_length=1)
        mb = buf.make_mini_batch(i * batch_size, (i + 1) * batch_size)
        trainer.optimizer.update(mb, batch_size)
        trainer.optimizer.update_reward_signals(mb)
        state["i"] += 1

    return step


# ---------------------------------------------------------------------------------------------- trainers
def _obs_act(spec):
    return int(sum(np.prod(o.shape) for o in spec.observation_specs)), int(spec.action_spec.continuous_size)


def build_fast_sac(tmp: str, rows: int, rng: np.random.Generator, with_builtin: bool = True,
               sizes: Optional[Dict[str, int]] = None) -> Bench:
    from bench.minimal_sac import MinimalSAC

    trainer, spec = common.make_trainer("fast_sac", tmp, sizes=sizes)
    common.fill(trainer, spec, rows, rng)
    hp, net = trainer.hyperparameters, trainer.trainer_settings.network_settings
    minimal = MinimalSAC(trainer.trainer_settings, *_obs_act(spec), rows=rows)
    builtin = step = None
    if with_builtin:
        sac, _ = common.make_trainer("sac", tmp, sizes=sizes)
        common.fill(sac, spec, rows, rng)
        builtin, step = "sac", builtin_sac_step(sac, hp.batch_size)
    return Bench("fast_sac", trainer.update_once, minimal,
                 f"batch {hp.batch_size}, n_step {hp.resolved_n_step()}, {net.num_layers}x{net.hidden_units}",
                 common.optimized_parameters(trainer.optimizer.head), builtin, step)


def build_taac(tmp: str, rows: int, rng: np.random.Generator, with_builtin: bool = True,
               sizes: Optional[Dict[str, int]] = None) -> Bench:
    from bench.minimal_taac import MinimalTAAC
    from mlagents_plugins.taac.trajectories import trajectory_size

    trainer, spec = common.make_trainer("taac", tmp, sizes=sizes)
    hp, net = trainer.hyperparameters, trainer.trainer_settings.network_settings
    d = trajectory_size(hp.trajectory_kind, spec.action_spec.continuous_size)

    def record(length: int) -> np.ndarray:  # [tau^- | tau | switch | repeats], what TaacPolicy writes
        tau = rng.uniform(-1, 1, (length, d)).astype(np.float32)
        switch = (rng.random((length, 1)) < 0.3).astype(np.float32)
        return np.concatenate([np.roll(tau, 1, 0), tau, switch, np.ones((length, 1), np.float32)], 1)

    common.fill(trainer, spec, rows, rng, log_probs=record)
    minimal = MinimalTAAC(trainer.trainer_settings, *_obs_act(spec), rows=rows)
    n_seq = int(math.ceil(hp.batch_size / hp.window_length))
    return Bench("taac", trainer.update_once, minimal,
                 f"{n_seq} windows x {hp.window_length}, {hp.num_critic_replicas} critics, "
                 f"{net.num_layers}x{net.hidden_units}", common.optimized_parameters(trainer.optimizer))


def build_muzero_repr(tmp: str, rows: int, rng: np.random.Generator, with_builtin: bool = True,
               sizes: Optional[Dict[str, int]] = None) -> Bench:
    from bench.minimal_muzero import MinimalMuZeroRepr

    trainer, spec = common.make_trainer("muzero_repr", tmp, sizes=sizes)
    common.fill(trainer, spec, rows, rng)
    hp = trainer.hyperparameters
    minimal = MinimalMuZeroRepr(trainer.trainer_settings, *_obs_act(spec), rows=rows)
    head_units, head_layers = hp.head_size(trainer.trainer_settings.network_settings)
    return Bench("muzero_repr", trainer.update_once, minimal,
                 f"batch {hp.batch_size}, K {hp.num_unroll_steps}, td {hp.td_steps}, latent {hp.latent_size}, "
                 f"model {hp.model_num_layers}x{hp.model_hidden_units}, head {head_layers}x{head_units}",
                 common.optimized_parameters(trainer.optimizer, trainer.optimizer.head))


def build_impala(tmp: str, rows: int, rng: np.random.Generator, with_builtin: bool = True,
               sizes: Optional[Dict[str, int]] = None) -> Bench:
    from bench.minimal_impala import MinimalImpala

    hp = common.trainer_settings("impala", sizes=sizes).hyperparameters
    B = -(-hp.batch_size // hp.unroll_length)  # full pieces per batch
    pieces_wanted = max(4 * B, rows // hp.unroll_length)
    # One stream gradient step on whole pieces; an epochs step is the same losses on shuffled steps.
    trainer, spec = common.make_trainer("impala", tmp, overrides={"buffer_size": pieces_wanted * hp.unroll_length,
                                                                 "update_style": "stream"}, sizes=sizes)
    common.fill(trainer, spec, pieces_wanted * hp.unroll_length, rng)
    queue = trainer.piece_queue
    pool = queue.take_fresh(queue.fresh_steps)
    state: Dict[str, Any] = {"i": 0, "stats": defaultdict(list)}

    def ours() -> None:
        i = state["i"]
        queue.add([pool[(i + j) % len(pool)] for j in range(B)])
        trainer._learn_on(queue.take_fresh(hp.batch_size), state["stats"])
        state["i"] = i + B
        if state["i"] % (50 * B) == 0:
            state["stats"] = defaultdict(list)

    net = trainer.trainer_settings.network_settings
    minimal = MinimalImpala(trainer.trainer_settings, *_obs_act(spec), pieces=len(pool))
    builtin = step = None
    if with_builtin:
        ppo, _ = common.make_trainer("ppo", tmp, sizes=sizes)
        common.fill(ppo, spec, max(rows, ppo.hyperparameters.buffer_size), rng)
        builtin, step = "ppo", builtin_ppo_step(ppo)
    return Bench("impala", ours, minimal,
                 f"{B} pieces x {hp.unroll_length} steps, {net.num_layers}x{net.hidden_units}",
                 common.optimized_parameters(trainer.optimizer), builtin, step)


BUILDERS = {"fast_sac": build_fast_sac, "taac": build_taac, "impala": build_impala,
            "muzero_repr": build_muzero_repr}


def updates_within(steps: Dict[str, Callable[[], None]], updates: int, warmup: int, budget_s: float,
                   blocks: int = 5) -> int:
    """Run ``warmup`` calls of every step (untimed for the result) and return how many timed calls per variant
    fit in ``budget_s`` at the warm-up pace: ``updates`` or fewer, never fewer than ``blocks``."""
    t0 = time.perf_counter()
    for step in steps.values():
        for _ in range(max(1, warmup)):
            step()
    per_round = (time.perf_counter() - t0) / max(1, warmup)
    return int(min(updates, max(blocks, budget_s // max(per_round, 1e-9))))


def measure(bench: Bench, threads_list: List[int], updates: int, warmup: int,
            budget_s: float = float("inf")) -> List[Dict[str, Any]]:
    """Rows of one trainer, one per thread count.  ``budget_s`` bounds the timed seconds per thread count (a
    loaded machine can make 2-thread updates many times slower); each row records the updates it timed."""
    import torch

    ours_bw, minimal_bw = backward_passes(bench.ours), backward_passes(bench.minimal.step)
    ours_n = sum(p.numel() for p in bench.ours_params)
    minimal_n = sum(p.numel() for p in common.optimized_parameters(*bench.minimal.optimizers))
    rows = []
    for threads in threads_list:
        torch.set_num_threads(threads)
        n = updates_within(bench.steps(), updates, warmup, budget_s)
        ms = common.time_interleaved(bench.steps(), n, warmup=0)
        rows.append({
            "trainer": bench.trainer,
            "threads": threads,
            "updates": 5 * max(1, n // 5),  # what time_interleaved times: 5 blocks
            "ours_ms": round(ms["ours"], 3),
            "minimal_ms": round(ms["minimal"], 3),
            "ratio_ours_over_minimal": round(ms["ours"] / ms["minimal"], 2),
            "builtin": bench.builtin,
            "builtin_ms": round(ms["builtin"], 3) if "builtin" in ms else None,
            "ratio_ours_over_builtin": round(ms["ours"] / ms["builtin"], 2) if "builtin" in ms else None,
            "work": bench.work,
            "backward_passes": f"{ours_bw} / {minimal_bw}",
            "trained_parameters": f"{ours_n} / {minimal_n}",
        })
    return rows


# ---------------------------------------------------------------------------------------------- memory
def parse_memory(text: str) -> Optional[Dict[str, int]]:
    """``SIZE:SEQ_LEN`` -> ``{"memory_size": SIZE, "sequence_length": SEQ_LEN}``; ``none`` -> None."""
    if text.strip().lower() == "none":
        return None
    parts = text.split(":")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
        raise ValueError(f"--memory {text!r} is invalid; allowed: SIZE:SEQ_LEN (e.g. 32:8) or none")
    size, seq_len = (int(part) for part in parts)
    if size < 2 or size % 2 or seq_len < 1:
        raise ValueError(f"--memory {text!r} is invalid; memory_size must be an even integer >= 2 (an LSTM's hidden "
                         "and cell halves) and sequence_length an integer >= 1")
    return {"memory_size": size, "sequence_length": seq_len}


def batch_steps_of_ours(trainer, samples: int) -> Dict[str, float]:
    """What one fast_sac update samples, from ``samples`` batches drawn outside the timing: sequences, rows gathered
    (windows of ``burn_in + sequence_length``) and trained rows (the window's rows in its chunk; burn-in rows run
    through the LSTMs without a loss).  Without memory: ``batch_size`` transitions, all trained."""
    hp = trainer.hyperparameters
    if trainer.memory is None:
        return {"sequences": float(hp.batch_size), "sampled": float(hp.batch_size), "trained": float(hp.batch_size)}
    from mlagents_plugins.fast_sac import recurrent

    count = recurrent.num_sequences(hp.batch_size, trainer.memory.sequence_length)
    trained = [int(trainer.sample_sequences().sel_tm1.shape[0]) for _ in range(samples)]
    return {"sequences": float(count), "sampled": float(count * (trainer.memory.sequence_length + hp.burn_in)),
            "trained": float(np.mean(trained))}


def batch_steps_of_builtin(trainer, batch_size: int, samples: int) -> Dict[str, float]:
    """What one built-in sac update samples (``sample_mini_batch`` as its trainer calls it), from ``samples``
    batches drawn outside the timing: sequences, steps (padding after a trajectory's end included) and real steps
    (``masks`` 1; the losses weigh padding by 0)."""
    from mlagents.trainers.buffer import BufferKey

    sequence_length = trainer.policy.sequence_length
    count = batch_size // sequence_length
    real = [float(np.sum(trainer.update_buffer.sample_mini_batch(batch_size, sequence_length)[BufferKey.MASKS]))
            for _ in range(samples)]
    return {"sequences": float(max(count, 1)), "sampled": float(count * sequence_length), "trained": float(np.mean(real))}


def measure_memory(tmp: str, rows: int, sizes: Dict[str, int], memory: Optional[Dict[str, int]],
                   threads_list: List[int], updates: int, warmup: int, budget_s: float,
                   samples: int = 20) -> List[Dict[str, Any]]:
    """Rows of one memory case: fast_sac's ``update_once`` and built-in sac's update, both built with ``memory``
    (and ``sizes``) and filled with the same random trajectories, timed interleaved; per update, per step of the
    batch and per trained step."""
    import torch

    label = "none" if memory is None else f"{memory['memory_size']}:{memory['sequence_length']}"
    ours, spec = common.make_trainer("fast_sac", os.path.join(tmp, label), sizes=sizes, memory=memory)
    sac, _ = common.make_trainer("sac", os.path.join(tmp, label), sizes=sizes, memory=memory)
    # trajectories cut at the config's time_horizon, as mlagents-learn hands them over: a sequence_length above it
    # leaves part of every sequence to padding (built-in sac) or outside the window's chunk (fast_sac)
    length = int(ours.trainer_settings.time_horizon)
    common.fill(ours, spec, rows, np.random.default_rng(0), length=length)
    common.fill(sac, spec, rows, np.random.default_rng(0), length=length)
    batch_size = ours.hyperparameters.batch_size
    steps = {"ours": ours.update_once, "builtin": builtin_sac_step(sac, batch_size)}
    counts = {"ours": batch_steps_of_ours(ours, samples), "builtin": batch_steps_of_builtin(sac, batch_size, samples)}
    net = ours.trainer_settings.network_settings
    out = []
    for step in steps.values():
        step()  # the first call compiles where the update is compiled: not part of the pace updates_within reads
    for threads in threads_list:
        torch.set_num_threads(threads)
        n = updates_within(steps, updates, warmup, budget_s)
        ms = common.time_interleaved(steps, n, warmup=0)
        row: Dict[str, Any] = {
            "trainer": "fast_sac", "builtin": "sac", "memory": label, "threads": threads,
            "updates": 5 * max(1, n // 5), "batch_size": batch_size, "burn_in": ours.hyperparameters.burn_in,
            "trajectory_length": length,
            "work": f"batch {batch_size}, {net.num_layers}x{net.hidden_units}",
            "ours_ms": round(ms["ours"], 3), "builtin_ms": round(ms["builtin"], 3),
            "ratio_ours_over_builtin": round(ms["ours"] / ms["builtin"], 2),
        }
        for side in ("ours", "builtin"):
            c = counts[side]
            row[f"{side}_sequences"] = c["sequences"]
            row[f"{side}_sampled_steps"] = c["sampled"]
            row[f"{side}_trained_steps"] = round(c["trained"], 2)
            row[f"{side}_us_per_sampled_step"] = round(1000.0 * ms[side] / c["sampled"], 2)
            row[f"{side}_us_per_trained_step"] = round(1000.0 * ms[side] / max(c["trained"], 1e-9), 2)
        row["ratio_per_trained_step"] = round(row["ours_us_per_trained_step"] / row["builtin_us_per_trained_step"], 2)
        out.append(row)
    return out


def memory_main(args: argparse.Namespace, sizes: Dict[str, int],
                memories: List[Optional[Dict[str, int]]]) -> Dict[str, Any]:
    """``--memory``: one block of rows per memory case, fast_sac beside built-in sac."""
    rows: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for memory in memories:
            label = "none" if memory is None else f"{memory['memory_size']}:{memory['sequence_length']}"
            if not args.json:
                print(f"[speed update] memory {label} ...", file=sys.stderr, flush=True)
            try:
                rows += measure_memory(tmp, args.rows, sizes, memory, args.threads, args.updates, args.warmup,
                                       args.budget_s)
            except Exception as err:  # noqa: BLE001 - one broken case must not hide the others' rows
                rows.append({"trainer": "fast_sac", "memory": label, "threads": None,
                             "error": f"{type(err).__name__}: {err}"[:300]})
    out = {"scene": common.SCENE, "updates": args.updates, "buffer_rows": args.rows, "sizes": sizes,
           "memory_rows": rows}
    if args.json:
        print(json.dumps(out))
        return out
    print(f"{'memory':<8} {'thr':>3} {'ours ms':>8} {'sac ms':>8} {'ratio':>6} {'ours us/step':>12} "
          f"{'sac us/step':>11} {'ours trained':>12} {'sac real':>8}")
    for r in rows:
        if r.get("error"):
            print(f"{r['memory']:<8} FAILED {r['error']}")
            continue
        print(f"{r['memory']:<8} {r['threads']:>3} {r['ours_ms']:>8} {r['builtin_ms']:>8} "
              f"{r['ratio_ours_over_builtin']:>6} {r['ours_us_per_trained_step']:>12} "
              f"{r['builtin_us_per_trained_step']:>11} {r['ours_trained_steps']:>12} {r['builtin_trained_steps']:>8}")
    return out


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench speed update", description=__doc__.split("\n")[0])
    p.add_argument("--updates", type=int, default=200, help="timed updates per variant and thread count (200)")
    p.add_argument("--warmup", type=int, default=10, help="untimed updates per variant first (10)")
    p.add_argument("--budget-s", type=float, default=45.0,
                   help="most timed seconds per trainer and thread count; fewer updates when slower (45)")
    p.add_argument("--rows", type=int, default=20000, help="steps put in each trainer's buffer (20000)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts (1 2)")
    p.add_argument("--trainers", nargs="+", default=list(TRAINERS), choices=list(TRAINERS))
    p.add_argument("--no-builtin", action="store_true", help="skip the built-in sac/ppo counterparts")
    p.add_argument("--hidden-units", type=int, help="network width of every trainer instead of its config's")
    p.add_argument("--num-layers", type=int, help="network depth of every trainer instead of its config's")
    p.add_argument("--batch-size", type=int, help="batch_size of every trainer instead of its config's")
    p.add_argument("--memory", nargs="+", metavar="SIZE:SEQ_LEN",
                   help="time fast_sac and built-in sac with network_settings.memory (memory_size:sequence_length, "
                        "or none: both without memory) per update and per step of the batch, one case after "
                        "another in this run; only those two trainers")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = p.parse_args(argv)
    sizes = {k: getattr(args, k) for k in common.SIZE_KEYS if getattr(args, k) is not None}
    for name, value in dict(updates=args.updates, rows=args.rows, **sizes).items():
        if value < 1:
            p.error(f"--{name.replace('_', '-')}={value} is invalid; must be an integer >= 1")
    if not args.budget_s > 0:
        p.error(f"--budget-s={args.budget_s} is invalid; must be a number of seconds > 0")
    if any(n < 1 for n in args.threads):
        p.error(f"--threads={args.threads} is invalid; every value must be an integer >= 1")

    memories = []
    if args.memory:
        try:
            memories = [parse_memory(text) for text in args.memory]
        except ValueError as err:
            p.error(str(err))
        if args.no_builtin or args.trainers not in (list(TRAINERS), ["fast_sac"]):
            p.error("--memory times fast_sac beside built-in sac: leave out --trainers (or give fast_sac only) "
                    "and --no-builtin")

    import logging

    import torch
    from mlagents_envs.logging_util import set_log_level

    set_log_level(logging.WARNING)
    torch.manual_seed(0)
    if args.memory:
        return memory_main(args, sizes, memories)
    rows: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.trainers:
            if not args.json:
                print(f"[speed update] {name} ...", file=sys.stderr, flush=True)
            try:
                bench = BUILDERS[name](tmp, args.rows, np.random.default_rng(0), with_builtin=not args.no_builtin,
                                       sizes=sizes)
                rows += measure(bench, args.threads, args.updates, args.warmup, args.budget_s)
            except Exception as err:  # noqa: BLE001 - one broken trainer must not hide the others' rows
                rows.append({"trainer": name, "threads": None, "error": f"{type(err).__name__}: {err}"[:300]})
    out = {"scene": common.SCENE, "updates": args.updates, "buffer_rows": args.rows, "sizes": sizes,
           "speed_rows": rows}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{'trainer':<12} {'thr':>3} {'ours ms':>8} {'minimal':>8} {'ratio':>6} {'builtin':>8} {'ms':>8}")
        for r in rows:
            if r.get("error"):
                print(f"{r['trainer']:<12} FAILED {r['error']}")
                continue
            print(f"{r['trainer']:<12} {r['threads']:>3} {r['ours_ms']:>8} {r['minimal_ms']:>8} "
                  f"{r['ratio_ours_over_minimal']:>6} {str(r['builtin'] or '-'):>8} {str(r['builtin_ms'] or '-'):>8}")
    return out

