# issue 55 lead: time a SAC critic-sized MLP's forward+backward (batch 256, 23 -> 256 -> 256 -> 1, twin critics as
# two MLPs), swish (SiLU) against ReLU, eager and torch.compile'd, one thread, same process, interleaved rounds.
import time, torch
torch.set_num_threads(1); torch.manual_seed(0)
def mlp(act):
    return torch.nn.Sequential(torch.nn.Linear(23, 256), act(), torch.nn.Linear(256, 256), act(), torch.nn.Linear(256, 1))
x = torch.randn(256, 23); y = torch.randn(256, 1)
nets = {name: [mlp(a) for _ in range(2)] for name, a in (("silu", torch.nn.SiLU), ("relu", torch.nn.ReLU))}
def step(ns):
    loss = sum(((n(x) - y) ** 2).mean() for n in ns); loss.backward()
fns = {}
for name, ns in nets.items():
    fns[f"{name} eager"] = (lambda ns=ns: step(ns))
    c = torch.compile(lambda ns=ns: step(ns))
    fns[f"{name} compiled"] = c
for f in fns.values():
    for _ in range(20): f()
res = {k: [] for k in fns}
for _ in range(5):
    for k, f in fns.items():
        t = time.perf_counter()
        for _ in range(300): f()
        res[k].append((time.perf_counter() - t) / 300 * 1e3)
for k, v in res.items():
    print(f"{k:14s} min {min(v):.3f} ms  median {sorted(v)[2]:.3f} ms")
print("silu/relu eager", round(min(res['silu eager']) / min(res['relu eager']), 3),
      "compiled", round(min(res['silu compiled']) / min(res['relu compiled']), 3))
