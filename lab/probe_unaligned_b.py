"""A row-major b whose rows are off 16 bytes (LM heads and other odd N), 17-2047 rows of a drawn
log-uniform: variant=None against wgmma_swap and wgmma_ws forced (each on b copied into padded rows,
copy_rows), torch beside; new_pick: past 64 rows, what swap_pays' rules and models pick for such a
shape with b read in place (what they weighed)
(docs/decisions/035-aligned-copy-pad.md). Flushed, in turns.
Usage: python lab/probe_unaligned_b.py SEED COUNT OUT.json"""
import math, random, sys, json, torch, cuda_ref
from bench.timing import time_interleaved
from cuda_ref import _matmul_swap as sw
from kernel_common import sm_count
rng = random.Random(int(sys.argv[1]))
NS = (30522, 50257, 32001, 4095, 1025, 3001, 7001, 11001, 5121, 2049, 151937)
out = []
for i in range(int(sys.argv[2])):
    M = int(math.exp(rng.uniform(math.log(17), math.log(2047))))
    N, K = rng.choice(NS), rng.choice((768, 1024, 2048, 4096))
    if N > 100000 and M > 512:  # (a's and c's bytes kept within a few GB)
        M = M // 4
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    sms = sm_count(a.device)
    new = M > 64 and (sw._swap_rules(M, N, K, 2, sms) or sw.swap_beats_ws(M, N, K, 2, sms))
    fns = [lambda: torch.mm(a, b), lambda: cuda_ref.matmul(a, b), lambda: cuda_ref.matmul(a, b, variant="wgmma_swap"),
           lambda: cuda_ref.matmul(a, b, variant="wgmma_ws")]
    t = [x.median_ms * 1e3 for x in time_interleaved(fns, rep_ms=20)]
    rec = {"shape": [M, N, K], "torch": t[0], "default": t[1], "swap": t[2], "ws": t[3], "new_pick": "swap" if new else ("ws" if M > 64 else "default"),
           "describe": cuda_ref.describe("matmul", a, b)}
    out.append(rec)
    print(M, N, K, "torch %.1f default %.1f swap %.1f ws %.1f new %s | %s" % (*t, rec["new_pick"], rec["describe"][:70]), flush=True)
json.dump({"device": torch.cuda.get_device_name(), "seed": int(sys.argv[1]), "records": out}, open(sys.argv[3], "w"), indent=1)
