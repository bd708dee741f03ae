import json, sys
def load(p):
    r = json.load(open(p))['results']['recordings']
    return {x['recording']: x for x in r}
a = load(sys.argv[1]); b = load(sys.argv[2])
groups = {}
for k, x in b.items():
    g = x['group']; y = a.get(k)
    if y is None: continue
    G = groups.setdefault(g, dict(raw=0, old=0, new=0, sac=0, paq=0, n=0, wsac_old=0, wsac_new=0, nsac=0, wpaq_old=0, wpaq_new=0, npaq=0, bigger=[]))
    G['n'] += 1; G['raw'] += x['raw']; G['old'] += y['L3']['bytes']; G['new'] += x['L3']['bytes']
    if x['L3']['bytes'] > y['L3']['bytes']: G['bigger'].append((k, round(100 * (x['L3']['bytes'] / y['L3']['bytes'] - 1), 2)))
    if 'sac' in x:
        G['nsac'] += 1; s = x['sac']['bytes']
        G['wsac_old'] += y['L3']['bytes'] < s; G['wsac_new'] += x['L3']['bytes'] < s
    if 'paq8px' in x:
        G['npaq'] += 1; s = x['paq8px']['bytes']
        G['wpaq_old'] += y['L3']['bytes'] < s; G['wpaq_new'] += x['L3']['bytes'] < s
for g, G in groups.items():
    print(f"{g:16s} n={G['n']:2d} ratio old {G['raw']/G['old']:.4f} new {G['raw']/G['new']:.4f} ({G['new']/G['old']-1:+.3%})  beats sac {G['wsac_old']}->{G['wsac_new']} of {G['nsac']}  beats paq8px {G['wpaq_old']}->{G['wpaq_new']} of {G['npaq']}")
    if G['bigger']: print("    larger:", G['bigger'])
for k in sorted(b):
    x = b[k]
    if x['group'] == 'audio' and 'sac' in x:
        print(f"  {k:32s} old {a[k]['L3']['bytes']:6d} new {x['L3']['bytes']:6d} sac {x['sac']['bytes']:6d} paq {x.get('paq8px',{}).get('bytes',0):6d} new/sac {x['L3']['bytes']/x['sac']['bytes']-1:+.2%}")
