import time, torch
torch.set_num_threads(1)
def t(f, n=200):
    for _ in range(20): f()
    s=time.thread_time()
    for _ in range(n): f()
    return (time.thread_time()-s)/n*1e6
for B,K,N in [(256,256,256),(256,23,256),(512,256,256)]:
    a=torch.randn(B,K); w=torch.randn(N,K); b=torch.randn(N)
    ab=a.bfloat16(); wb=w.bfloat16(); bb=b.bfloat16()
    f32=t(lambda: torch.addmm(b,a,w.t()))
    bf=t(lambda: torch.addmm(bb,ab,wb.t()))
    def ac():
        with torch.autocast("cpu",torch.bfloat16):
            return torch.nn.functional.linear(a,w,b)
    aut=t(ac)
    print(B,K,N, f"fp32 {f32:.0f}us  bf16 operands {bf:.0f}us  autocast {aut:.0f}us")
print(torch.backends.mkldnn.is_available(), torch.__version__, torch.backends.cpu.get_cpu_capability())
