"""The one /proc/cpuinfo reader (mlagents_plugins.common.cpu_info) and the three places that ask it."""
import json
import subprocess
import sys

from mlagents_plugins.common import bf16_matmul, compile_cache, cpu_info

# two processors that disagree (a real machine's do not), so "the first wins" is visible; tabs as Linux writes them
LISTING = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9R14 96-Core Processor
flags\t\t: fpu sse4_2 avx2 avx512f avx512_bf16
bugs\t\t: sysret_ss_attrs

processor\t: 1
cpu family\t: 26
model name\t: Other CPU
flags\t\t: fpu
"""


def test_parse_keeps_the_first_processors_values():
    fields = cpu_info.parse_cpuinfo(LISTING)
    assert fields["model name"] == "AMD EPYC 9R14 96-Core Processor"
    assert fields["flags"] == "fpu sse4_2 avx2 avx512f avx512_bf16"
    assert fields["processor"] == "0" and fields["vendor_id"] == "AuthenticAMD"
    assert cpu_info.parse_cpuinfo("") == {} and cpu_info.parse_cpuinfo("no colon here\n") == {}


def test_every_reader_answers_from_the_one_listing(monkeypatch):
    monkeypatch.setattr(cpu_info, "cpu_fields", lambda: cpu_info.parse_cpuinfo(LISTING))
    assert cpu_info.cpu_flags() == frozenset({"fpu", "sse4_2", "avx2", "avx512f", "avx512_bf16"})
    assert cpu_info.cpu_model() == "AMD EPYC 9R14 96-Core Processor"
    assert bf16_matmul.native_bf16_matmul("cpu") and not bf16_matmul.native_bf16_matmul("meta")
    # the compile cache's key keeps its format (caches made before the shared reader stay valid): model and
    # sorted flags only
    assert json.loads(compile_cache.cpu_identity()) == {
        "flags": "avx2 avx512_bf16 avx512f fpu sse4_2", "model name": "AMD EPYC 9R14 96-Core Processor"}
    from bench.invocation import machine_kind
    assert machine_kind().endswith(", AMD EPYC 9R14 96-Core Processor (family 25, model 17), AVX-512 BF16")
    assert cpu_info.cpu_generation() == "family 25, model 17"


def test_machine_kind_names_the_generation_where_linux_lists_it(monkeypatch):
    # Two AMD machines whose model name is only "AMD EPYC", both with AVX-512 BF16, ran one workload at 86 and 121
    # env steps per CPU second: Zen 4 (family 25) and Zen 5 (family 26) are two kinds.
    from bench.invocation import machine_kind

    kinds = []
    for family, model in (("25", "17"), ("26", "2")):
        listing = f"model name\t: AMD EPYC\ncpu family\t: {family}\nmodel\t\t: {model}\nflags\t\t: avx512f avx512_bf16\n"
        monkeypatch.setattr(cpu_info, "cpu_fields", lambda text=listing: cpu_info.parse_cpuinfo(text))
        kinds.append(machine_kind())
    assert kinds[0].endswith(", AMD EPYC (family 25, model 17), AVX-512 BF16")
    assert kinds[1].endswith(", AMD EPYC (family 26, model 2), AVX-512 BF16")
    # without the numbers (another architecture) the kind is as before
    monkeypatch.setattr(cpu_info, "cpu_fields", lambda: cpu_info.parse_cpuinfo("model name\t: Some CPU\n"))
    assert cpu_info.cpu_generation() == "" and ", Some CPU, " in machine_kind()


def test_no_listing_falls_back_to_platform(monkeypatch):
    monkeypatch.setattr(cpu_info, "cpu_fields", lambda: {})
    monkeypatch.setattr(cpu_info.platform, "processor", lambda: "")
    assert cpu_info.cpu_flags() == frozenset() and cpu_info.cpu_model() == "unknown CPU"
    assert not bf16_matmul.native_bf16_matmul("cpu")


def test_the_reader_does_not_import_torch():
    code = "import sys, mlagents_plugins.common.cpu_info as c; c.cpu_model(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"
