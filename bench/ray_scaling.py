"""Environment-copy scaling: ``RayEnvManager`` against ML-Agents' ``SubprocessEnvManager``.

Each copy is a stand-in Balance build started with ``--step-cost-ms C``: every STEP sleeps C ms, as a heavy
Unity scene keeps its own machine busy, so the ideal rate of N copies is N * 1000 / C env steps/s.  The
managers are driven the way ``TrainerController.advance`` drives them (``get_steps`` + ``process_steps``)
but without policies, so the numbers are the environment side alone: the learner's own cost is estimated
separately in the README ("Many machines").  Rates are counted after a warm-up, over a fixed window.

    python -m bench ray                                        # 1, 2, 4, 8 copies at 50 ms, and 0 ms overhead
    python -m bench ray --counts 1 2 --seconds 5 --out results/ray-quick

Writes ``OUT/ray_scaling.json``, ``OUT/ray_scaling.md`` and (with matplotlib) ``OUT/ray_scaling.png``.
Ray runs as a private local instance bound to loopback (``--ray-address=local`` semantics).
"""
import argparse
import json
import logging
import os
import platform
import tempfile
import time
from typing import Dict, List

from mlagents.trainers.learn import create_environment_factory
from mlagents.trainers.settings import RunOptions
from mlagents.trainers.subprocess_env_manager import SubprocessEnvManager

from mlagents_plugins.envs.standin import write_builds
from mlagents_plugins.testing.ports import free_base_port


def measure(manager, seconds: float, warmup: float) -> Dict[str, float]:
    """Env steps/s (one step = one copy's STEP round trip) over ``seconds`` after ``warmup``."""
    manager.reset({})  # as TrainerController does (the subprocess workers need a dict)
    end_warmup = time.perf_counter() + warmup
    while time.perf_counter() < end_warmup:
        manager.get_steps()
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += len(manager.get_steps())
    elapsed = time.perf_counter() - start
    return {"steps": steps, "seconds": elapsed, "steps_per_second": steps / elapsed}


def make_subprocess(build: str, n: int, cost_ms: float, logs: str) -> SubprocessEnvManager:
    factory = create_environment_factory(build, True, False, 0, 1, 60, free_base_port(n),
                                         ["--step-cost-ms", str(cost_ms)], logs)
    return SubprocessEnvManager(factory, RunOptions(), n)


def make_ray(build: str, n: int, cost_ms: float, logs: str):
    from mlagents_plugins.ray_envs.actor import LaunchSpec
    from mlagents_plugins.ray_envs.manager import RayEnvManager, RayOptions

    spec = LaunchSpec(env_path=build, no_graphics=True, no_graphics_monitor=False, seed=0, num_areas=1,
                      timeout_wait=60, env_args=["--step-cost-ms", str(cost_ms)], log_folder=logs)
    # Copies reserve no CPUs: on one machine the bench wants all N copies placed whatever the core count.
    return RayEnvManager(spec, RunOptions(), n, RayOptions(cpus_per_env=0))


def run_one(kind: str, build: str, n: int, cost_ms: float, seconds: float, warmup: float) -> Dict[str, float]:
    logs = tempfile.mkdtemp(prefix=f"raybench-{kind}-")
    t0 = time.perf_counter()
    manager = (make_ray if kind == "ray" else make_subprocess)(build, n, cost_ms, logs)
    try:
        result = measure(manager, seconds, warmup)
    finally:
        manager.close()
    result.update(kind=kind, copies=n, cost_ms=cost_ms, wall=time.perf_counter() - t0)
    print(f"{kind:10s} copies={n} cost={cost_ms:g} ms: {result['steps_per_second']:.1f} env steps/s "
          f"({result['steps']} steps in {result['seconds']:.1f} s)", flush=True)
    return result


def report(rows: List[Dict], args, out: str) -> str:
    by = {(r["kind"], r["copies"], r["cost_ms"]): r["steps_per_second"] for r in rows}
    cost = args.cost_ms
    lines = [
        f"# Environment-copy scaling: Ray vs subprocesses ({cost:g} ms per env step)", "",
        f"Measured {args.measured} on {platform.node() or 'this machine'} "
        f"({os.cpu_count()} cores), one machine, private Ray instance on loopback; {args.seconds:g} s windows after "
        f"{args.warmup:g} s warm-up. {args.note}".rstrip(), "",
        f"Ideal = copies x 1000 / {cost:g} env steps/s (the sleep alone). \"of ideal\" = measured / ideal. "
        "\"of linear\" = measured / (copies x the same manager's 1-copy rate): scaling efficiency, which leaves "
        "out the per-step cost that one copy already pays.", "",
        "| copies | ideal | subprocess | of ideal | of linear | Ray | of ideal | of linear |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    first = min(args.counts)
    for n in args.counts:
        ideal = n * 1000.0 / cost
        cells = []
        for kind in ("subprocess", "ray"):
            v, one = by.get((kind, n, cost)), by.get((kind, first, cost))
            if v is None or one is None:
                cells.append("- | - | -")
            else:
                cells.append(f"{v:.1f} | {100 * v / ideal:.0f}% | {100 * v / (one * n / first):.0f}%")
        lines.append(f"| {n} | {ideal:.0f} | {cells[0]} | {cells[1]} |")
    lines += ["", "## Overhead with zero-cost steps", "",
              "| copies | subprocess steps/s | ms/step | Ray steps/s | ms/step |", "| ---: | ---: | ---: | ---: | ---: |"]
    for n in args.zero_counts:
        sub, ray_rate = by.get(("subprocess", n, 0.0)), by.get(("ray", n, 0.0))
        if sub and ray_rate:
            lines.append(f"| {n} | {sub:.1f} | {1000 / sub:.2f} | {ray_rate:.1f} | {1000 / ray_rate:.2f} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "ray_scaling.md"), "w") as f:
        f.write(text)
    return text


def plot(rows: List[Dict], args, out: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    fig, ax = plt.subplots(figsize=(5, 3.5))
    counts = args.counts
    ax.plot(counts, [n * 1000.0 / args.cost_ms for n in counts], "k--", label="ideal (linear)")
    for kind, style in (("subprocess", "o-"), ("ray", "s-")):
        pts = sorted((r["copies"], r["steps_per_second"]) for r in rows if r["kind"] == kind and r["cost_ms"] == args.cost_ms)
        if pts:
            ax.plot(*zip(*pts), style, label=kind)
    ax.set_xlabel("environment copies")
    ax.set_ylabel("env steps / s")
    ax.set_title(f"{args.cost_ms:g} ms per env step")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "ray_scaling.png"), dpi=100)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench ray", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--counts", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--zero-counts", type=int, nargs="*", default=[1, 4], help="copy counts for the 0 ms overhead runs")
    p.add_argument("--cost-ms", type=float, default=50.0)
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--kinds", nargs="+", default=["subprocess", "ray"], choices=["subprocess", "ray"])
    p.add_argument("--out", default="results/bench-ray")
    p.add_argument("--note", default="")
    p.add_argument("--report-only", action="store_true", help="re-render OUT/ray_scaling.md/.png from OUT/ray_scaling.json")
    args = p.parse_args(argv)
    if args.report_only:
        with open(os.path.join(args.out, "ray_scaling.json")) as f:
            saved = json.load(f)
        args = argparse.Namespace(**{**saved["args"], "out": args.out})
        print(report(saved["rows"], args, args.out))
        plot(saved["rows"], args, args.out)
        return
    os.makedirs(args.out, exist_ok=True)
    # No trainers here: silence "Agent manager was not created" for the first (reset) steps.
    logging.getLogger("mlagents.trainers.env_manager").setLevel(logging.ERROR)
    builds = tempfile.mkdtemp(prefix="raybench-builds-")
    write_builds(builds)
    build = os.path.join(builds, "Balance")
    if "ray" in args.kinds:
        import ray

        from mlagents_plugins.ray_envs.cli import connect

        connect("local", num_envs=max(args.counts), cpus_per_env=1)
    args.measured = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = []
    try:
        for cost, counts in ((args.cost_ms, args.counts), (0.0, args.zero_counts)):
            for n in counts:
                for kind in args.kinds:
                    rows.append(run_one(kind, build, n, cost, args.seconds, args.warmup))
    finally:
        if "ray" in args.kinds:
            ray.shutdown()
    with open(os.path.join(args.out, "ray_scaling.json"), "w") as f:
        json.dump({"args": vars(args), "rows": rows}, f, indent=1)
    print(report(rows, args, args.out))
    plot(rows, args, args.out)

