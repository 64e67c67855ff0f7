#!/bin/bash
# issue 55: per-process and per-phase split of fast_sac on HalfCheetah-v5 at one agent, fp32 then bf16 (8000 steps, 5000 random: 3000 updates)
cd /work/wt-bf16
export PYTHONPATH=/work/wt-bf16
P=/work/main/.venv/bin/python
for prec in fp32 bf16 fp32 bf16; do
  $P -m bench gym-split --agents 1 --steps 8000 --buffer-init-steps 5000 --summary-freq 1000 --set update_precision=$prec --note "update_precision $prec" --out /work/s14/split.jsonl
done
