"""Per-scene table of two or more screens of fast_sac: each seed's final (bench's ``final_mean_reward``) and steps to
threshold (the first summary at or above it).  Usage: python compare.py label=RECORDS.jsonl ..."""
import json, sys
def load(d):
    out = {}
    for l in open(d if d.endswith('.jsonl') else d + '/runs.jsonl'):
        r = json.loads(l)
        out.setdefault(r['scene'], {})[r['seed']] = r
    return out
def to_thr(r):
    thr = r['threshold']
    for step, _, val in r["curve"]:
        if val is not None and val >= thr:
            return step
    return None
cols = [a.split('=', 1) for a in sys.argv[1:]]
data = [(lab, load(d)) for lab, d in cols]
scenes = sorted(set().union(*[set(x) for _, x in data]))
print('| scene | ' + ' | '.join(f'{lab}: finals (mean)' for lab, _ in data) + ' | ' + ' | '.join(f'{lab}: steps to threshold' for lab, _ in data) + ' |')
print('|---' * (1 + 2 * len(data)) + '|')
for s in scenes:
    fin, thr = [], []
    for lab, x in data:
        runs = x.get(s, {})
        if not runs:
            fin.append('-'); thr.append('-'); continue
        f = [runs[k]['final_mean_reward'] for k in sorted(runs)]
        fin.append(' / '.join(f'{v:.2f}' for v in f) + f' ({sum(f)/len(f):.2f})')
        thr.append(' / '.join(str(to_thr(runs[k]) or '-') for k in sorted(runs)))
    print(f'| {s} | ' + ' | '.join(fin) + ' | ' + ' | '.join(thr) + ' |')
