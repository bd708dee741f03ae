import os; os.environ.setdefault("UBPE_DATA", "/work/shared/data")
import json, sys
r = json.load(open('benchmarks/results/level3.json'))['results']['recordings']
ref = {x['recording'].split('/',1)[-1]: x for x in r if x['group']=='audio'}
a = json.load(open(f'.exp/{sys.argv[1]}.json'))
b = json.load(open(f'.exp/{sys.argv[2]}.json')) if len(sys.argv) > 2 else None
tot = [0,0,0,0]
for k in sorted(a):
    if k not in ref: continue
    x = ref[k]; s = x['sac']['bytes']; l3 = x['L3']['bytes']
    line = f"{k:28s} n={x['values']:6d} L3={l3:6d} sac={s:6d} def={a[k]:6d} def/sac={a[k]/s-1:+.2%}"
    if b: line += f" new={b[k]:6d} {b[k]/a[k]-1:+.2%} new/sac={b[k]/s-1:+.2%}"
    print(line)
    tot[0]+=l3; tot[1]+=s; tot[2]+=a[k]; tot[3]+= b[k] if b else 0
print(tot, (tot[3]/tot[2]-1) if b else '')
if b:
    for k in sorted(a):
        if k not in ref: print(k, a[k], b[k], f"{b[k]/a[k]-1:+.2%}")
