"""The path docs/ray.md gives for one machine: a cluster started with ``ray start --head`` (Ray's CLI, token
authentication on by default), every Ray port on loopback, joined with ``--ray-address=auto``, and the build
shipped to the copies with ``--ray-runtime-env '{"working_dir": ...}'`` and ``--env`` relative to it."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

pytest.importorskip("ray")  # the ray extra is optional; without it these tests skip

from mlagents_plugins.testing.ports import free_base_port
from tests.envs.test_e2e import CONFIG, check_onnx
from tests.ray_envs.conftest import LEARN, LearnProcess, learn_cmd  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
RAY = os.path.join(os.path.dirname(LEARN), "ray")
LISTEN = "0A"  # TCP state LISTEN in /proc/net/tcp*


def loopback(hex_address: str) -> bool:
    """/proc/net/tcp{,6} local address (hex, host byte order per 32-bit word) -> is it loopback?"""
    ip = hex_address.split(":")[0]
    if len(ip) == 8:
        return ip.endswith("7F")  # 127.x.y.z, little-endian
    if ip == "00000000000000000000000001000000":
        return True  # ::1
    return ip[:24] == "0000000000000000FFFF0000" and ip[-2:] == "7F"  # ::ffff:127.x.y.z


def listening_sockets():
    """{socket inode: (local address hex, is loopback)} for every listening TCP socket on the machine."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == LISTEN:
                    found[cols[9]] = (cols[1], loopback(cols[1]))
    return found


def socket_inodes(pgid: int, *pids: int):
    """{inode: pid} of the sockets held by processes in process group ``pgid`` and by ``pids``."""
    inodes = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[3]) != pgid and int(entry) not in pids:
                    continue
            for fd in os.listdir(f"/proc/{entry}/fd"):
                target = os.readlink(f"/proc/{entry}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes[target[len("socket:["):-1]] = int(entry)
        except OSError:
            continue
    return inodes


def ray_listening(pgid: int, *pids: int):
    """The listening sockets of the Ray processes; fails if any is open beyond loopback."""
    sockets = listening_sockets()
    ours = {inode: pid for inode, pid in socket_inodes(pgid, *pids).items() if inode in sockets}
    open_to_network = {sockets[i][0]: pid for i, pid in ours.items() if not sockets[i][1]}
    assert not open_to_network, f"Ray listens beyond loopback (address hex: pid): {open_to_network}"
    return ours


def test_loopback_head_started_by_ray_start_joined_with_auto_and_a_shipped_build(builds, tmp_path):  # noqa: F811
    home = tmp_path / "home"  # Ray keeps the cluster's token in ~/.ray; keep it out of the user's home
    home.mkdir()
    temp_dir = tempfile.mkdtemp(prefix="raystart-", dir="/tmp")  # Ray's socket paths must stay short
    env = dict(os.environ, HOME=str(home), RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    # A token in ~/.ray makes `ray start` turn token authentication on (as after any earlier ray.init(),
    # which saves one); the learner must then join with it.
    subprocess.run([RAY, "get-auth-token", "--generate"], env=env, capture_output=True, check=True, timeout=60)
    port = free_base_port(1)
    start = subprocess.run(
        [RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--include-dashboard=false",
         "--num-cpus=2", f"--temp-dir={temp_dir}", "--disable-usage-stats"],
        env=env, capture_output=True, text=True, timeout=180, start_new_session=True,
    )
    pgid = None
    try:
        assert start.returncode == 0, start.stdout[-3000:] + start.stderr[-3000:]
        time.sleep(2)
        gcs_pid = int(subprocess.run(["pgrep", "-f", f"gcs_server.*{temp_dir}"], capture_output=True,
                                     text=True).stdout.split()[0])
        with open(f"/proc/{gcs_pid}/stat") as f:
            pgid = int(f.read().rsplit(")", 1)[1].split()[3])
        # the GCS, the raylet's two servers, the client server and the runtime-env agent at least
        assert len(ray_listening(pgid)) >= 4
        assert "Token authentication is enabled" in start.stdout + start.stderr, start.stderr[-3000:]

        cfg = tmp_path / "ppo.yaml"
        cfg.write_text(CONFIG.format(max_steps=1000))
        elsewhere = tmp_path / "elsewhere"  # neither the build nor the repository is in the run's folder
        elsewhere.mkdir()
        proc = LearnProcess(
            learn_cmd(str(cfg), "auto", "--env=Balance", "--run-id=shipped", "--num-envs=2",
                      f"--results-dir={tmp_path / 'results'}", "--ray-runtime-env",
                      f'{{"working_dir": "{os.path.relpath(builds, elsewhere)}"}}'),
            str(tmp_path / "learn.log"), cwd=str(elsewhere), HOME=str(home),
        )
        proc.wait_for("environment copies running on Ray node(s)", timeout=180)
        ray_listening(pgid, proc.proc.pid)  # now with the copies' workers and the learner's own Ray servers
        assert proc.finish(timeout=300) == 0, proc.output()[-4000:]
        out = proc.output()
        assert "2 environment copies running on Ray node(s): 127.0.0.1/" in out, out[-3000:]
        check_onnx(str(tmp_path / "results" / "shipped" / "Balance.onnx"))
    finally:
        if pgid is not None:
            os.killpg(pgid, signal.SIGKILL)
        subprocess.run(["pkill", "-9", "-f", temp_dir], check=False)
        shutil.rmtree(temp_dir, ignore_errors=True)
