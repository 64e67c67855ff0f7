"""Relabel machine_kind in runs.jsonl files made before bench's kind named the vector tier (dd9e7f3).
Records started from 2026-11-30 20:20 UTC until 2026-12-01 02:25 (sessions 17 and 18, both on the AVX2 AMD EPYC) get
', AVX2'; the other '2 cores, AMD EPYC' records (sessions 15-16 before, session 19 from 2026-12-01 02:30: the AVX-512
BF16 AMD EPYC) get ', AVX-512 BF16'.  A later session on another machine kind adds a cut.  Speeds check the split.  Session 19's records
(from 02:25 on 2026-12-01) name the family and model numbers of its processor (family 26, model 2)."""
import json, sys
for path in sys.argv[1:]:
    out = []
    for line in open(path):
        r = json.loads(line)
        if r.get("machine_kind") == "2 cores, AMD EPYC":
            tier = "AVX2" if "2026-11-30 20:20" <= r.get("started", "") < "2026-12-01 02:25" else "AVX-512 BF16"
            r["machine_kind"] = f"2 cores, AMD EPYC, {tier}"
            r["machine_kind_note"] = "tier added from the session's CPU flags (dd9e7f3)"
        if r.get("machine_kind") == "2 cores, AMD EPYC, AVX-512 BF16" and r.get("started", "") >= "2026-12-01 02:25":
            # session 19's machine read family 26, model 2 (Zen 5): SB3's SAC ran 121 env steps per CPU s there at 20k
            # against 86 on the AVX-512 BF16 EPYC of session 14; bench's machine_kind names the numbers since 1782e3c
            r["machine_kind"] = "2 cores, AMD EPYC (family 26, model 2), AVX-512 BF16"
            r["machine_kind_note"] = "tier and family added from the session's /proc/cpuinfo (dd9e7f3, 1782e3c)"
        out.append(r)
        print(path, r.get("trainer"), r.get("scene"), r.get("seed"), r.get("started"), r.get("machine_kind"),
              round(r.get("steps_per_cpu_s") or 0, 1))
    with open(path, "w") as f:
        for r in out:
            f.write(json.dumps(r, sort_keys=True) + "\n")
