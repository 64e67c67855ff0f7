"""A local multi-node Ray cluster for the ray_envs tests: a head without CPUs (the learner's node) and two
worker "nodes" with 2 CPUs each, all bound to 127.0.0.1 and without dashboards.

With ``--ray-cpus-per-env 1`` four copies fill both worker nodes, two each (Ray's SPREAD placement), and a
copy whose node is removed finds no room elsewhere.  Each node also carries a custom resource naming it
(``node_a`` / ``node_b``) so a test can pin copies with ``--ray-env-resources``.  Ray is imported only when
a cluster is made: each test module skips itself first (``pytest.importorskip``) when ray is not installed.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from tests.envs.conftest import REPO

LOOPBACK = "127.0.0.1"
LEARN = os.path.join(os.path.dirname(sys.executable), "mlagents-plugins-learn")
NODE_ARGS = dict(node_ip_address=LOOPBACK, include_dashboard=False, object_store_memory=80 * 1024 * 1024)


class LocalCluster:
    def __init__(self):
        from ray.cluster_utils import Cluster

        # A short private temp dir: Ray's socket paths must stay under 107 characters, and /tmp/ray is shared.
        self.temp_dir = tempfile.mkdtemp(prefix="ray16-", dir="/tmp")
        # Cluster() still writes the head's address to Ray's default temp dir (/tmp/ray/ray_current_cluster) and, in
        # ray 2.60, fails when that directory does not exist yet (a machine where Ray never ran with its defaults).
        from ray._private.utils import get_ray_address_file

        os.makedirs(os.path.dirname(get_ray_address_file(None)), exist_ok=True)
        self.cluster = Cluster(initialize_head=True, head_node_args=dict(NODE_ARGS, num_cpus=0, temp_dir=self.temp_dir))
        self.nodes = {
            name: self.cluster.add_node(**NODE_ARGS, num_cpus=2, resources={name: 2})
            for name in ("node_a", "node_b")
        }

    @property
    def address(self) -> str:
        return self.cluster.address

    def raylet_pid(self, name: str) -> int:
        return self.nodes[name].all_processes["raylet"][0].process.pid

    def node_of_pid(self, pid: int) -> str:
        """Which worker node a process (an actor, or a build launched by one) belongs to."""
        raylets = {self.raylet_pid(n): n for n in self.nodes}
        while pid > 1:
            if pid in raylets:
                return raylets[pid]
            pid = parent_pid(pid)
        return ""

    def remove(self, name: str) -> None:
        self.cluster.remove_node(self.nodes.pop(name))

    def shutdown(self) -> None:
        try:
            self.cluster.shutdown()
        finally:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def build_pids(run_logs_dir: str):
    """{copy index: pid} of the stand-in builds writing into this run's run_logs (found through /proc)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"mlagents_plugins.envs.standin" not in args:
            continue
        for i, a in enumerate(args):
            if a.lower() == b"-logfile" and i + 1 < len(args):
                log = args[i + 1].decode()
                if os.path.dirname(log) == run_logs_dir:
                    found[int(os.path.basename(log)[len("Player-"):-len(".log")])] = int(entry)
    return found


@pytest.fixture
def local_cluster():
    cluster = LocalCluster()
    try:
        yield cluster
    finally:
        cluster.shutdown()


def learn_cmd(config: str, address: str, *args: str):
    return [LEARN, config, f"--ray-address={address}", "--ray-cpus-per-env", "1", "--torch-device", "cpu",
            "--no-graphics", "--timeout-wait", "60", *args]


def learn_env():
    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MLAGENTS_PLUGINS_COMPILE="0")


class LearnProcess:
    """mlagents-plugins-learn in the background, its output in a file the test can watch."""

    def __init__(self, cmd, log_path: str, cwd: str = REPO, **env: str):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=dict(learn_env(), **env))

    def output(self) -> str:
        with open(self.log_path) as f:
            return f.read()

    def wait_for(self, text: str, timeout: float, count: int = 1) -> None:
        deadline = time.time() + timeout
        while self.output().count(text) < count:
            if self.proc.poll() is not None:
                raise AssertionError(f"run ended (rc {self.proc.returncode}) before {text!r}:\n{self.output()[-4000:]}")
            if time.time() > deadline:
                raise AssertionError(f"no {text!r} within {timeout} s:\n{self.output()[-4000:]}")
            time.sleep(0.5)

    def finish(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.log.close()
