"""Does the compiled whole step run with update_precision bf16 (no eager fallback), and how fast against fp32?"""
import sys, time, tempfile, pathlib
import numpy as np, torch
sys.path.insert(0, "/work/wt-bf16")
torch.set_num_threads(1)
from tests.builders import behavior_spec, trajectory
from tests.fast_sac.helpers import make_trainer
spec = behavior_spec(((17,),), cont=6)
out = {}
tmp = pathlib.Path(tempfile.mkdtemp())
trainers = {}
for prec in ("fp32", "bf16"):
    torch.manual_seed(0)
    tr = make_trainer(spec, tmp / prec, hidden_units=256, num_layers=2, batch_size=256, buffer_size=100000,
                      buffer_init_steps=10 ** 9, compile_update=True, update_precision=prec)
    rng = np.random.default_rng(0)
    for i in range(40):
        tr._process_trajectory(trajectory(spec, 64, rng, done=i % 3 == 0))
    t0 = time.process_time()
    for _ in range(30):
        tr.update_once()
    print(prec, "first 30 updates (compile) cpu s", round(time.process_time() - t0, 1),
          "mode", tr.optimizer.head.loss_step.mode, getattr(tr.optimizer.head.loss_step, "error", None), flush=True)
    trainers[prec] = tr
for rnd in range(3):
    for prec, tr in trainers.items():
        t0 = time.process_time()
        for _ in range(200):
            tr.update_once()
        print(rnd, prec, "ms/update", round((time.process_time() - t0) / 200 * 1e3, 2), flush=True)
