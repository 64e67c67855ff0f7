"""Forward + backward of one hidden layer (H x H) on a batch of B rows: nn.Linear against Bf16Linear inside the
bf16 scope; thread-CPU microseconds per call, alternating, one thread."""
import time, torch
from mlagents_plugins.common.bf16_matmul import Bf16Linear, bf16_products
torch.set_num_threads(1)

def t(f, n=300):
    for _ in range(20): f()
    s = time.thread_time()
    for _ in range(n): f()
    return (time.thread_time() - s) / n * 1e6

for B, H in [(128, 128), (256, 128), (128, 256), (256, 256), (512, 256)]:
    lin = torch.nn.Linear(H, H)
    bl = torch.nn.Linear(H, H); bl.__class__ = Bf16Linear
    x = torch.randn(B, H, requires_grad=True)
    def step(layer):
        y = layer(x); y.sum().backward()
    def fp():
        step(lin)
    def bf():
        with bf16_products(True):
            step(bl)
    r = []
    for _ in range(3):
        r.append((t(fp), t(bf)))
    f = min(a for a, _ in r); b = min(b for _, b in r)
    print(f"B {B} H {H}: fp32 {f:.0f} us, bf16 {b:.0f} us, ratio {b / f:.2f}")
