"""Shares of a ``perf report --sort dso,symbol`` listing by kind of work (first matching rule wins)."""
import collections
import re
import sys

RULES = [
    ("oneDNN JIT (bf16 AMX GEMM kernels)", r"\[JIT\]"),
    ("MKL sgemm (fp32 GEMMs)", r"mkl_blas"),
    ("oneDNN / ideep call overhead", r"dnnl|ideep|brgemm"),
    ("Sleef / libm (exp, tanh, pow)", r"Sleef|libm\.so|powf|log1p"),
    ("Inductor's generated kernels", r"main\.so.*cpp_fused"),
    ("Inductor's C++ wrapper", r"main\.so"),
    ("AOTI shims", r"aoti_torch|torch::inductor::"),
    ("ATen eager loops (copy, Polyak lerp)", r"VectorizedLoop|native::"),
    ("malloc / free", r"libc\.so.*(malloc|free|_int_|chunk|memalign|consolidate)"),
    ("libc other", r"libc\.so"),
    ("Python interpreter", r"libpython"),
    ("torch's Python bindings (incl. Dynamo guards)", r"libtorch_python"),
    ("c10", r"libc10"),
    ("libtorch other (dispatcher, TensorImpl)", r"libtorch_cpu"),
    ("libstdc++", r"libstdc"),
]

shares: collections.Counter = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d.]+)%\s+(.*)", line)
    if not m:
        continue
    for name, rule in RULES:
        if re.search(rule, m.group(2)):
            shares[name] += float(m.group(1))
            break
    else:
        shares["other"] += float(m.group(1))
for name, share in shares.most_common():
    print(f"{share:6.2f}%  {name}")
