"""Transposes of large matrices, both backends' defaults as shipped and at several band widths
(the columns of tiles a band, tiles down the columns within it: CUDA's band_width, Triton's
WORDS_BAND, which its blocked kernel does not take), against a same-size copy and torch, L2
flushed, in turns; each checked bit for bit. Usage (GPU):
python lab/probe_tile_bands.py [--groups 1 4 8 16] [--json OUT]"""
import argparse
import json

import torch

from bench.timing import time_interleaved
from cuda_ref import _transpose as cuda_t
from triton_impl import _transpose as triton_t

# (from the fp16 draw of seed 230: tall, wide and square, rows on and off 16 bytes)
SHAPES = [((109850, 7287), torch.float16), ((94541, 5182), torch.float16), ((103423, 2482), torch.float16),
          ((105352, 582), torch.float16), ((94424, 149), torch.float16), ((49937, 285), torch.float16),
          ((38243, 12254), torch.float16), ((8314, 121016), torch.float16), ((614, 131003), torch.float16),
          ((44376, 6760), torch.float16), ((16384, 16384), torch.float16), ((12345, 6789), torch.float16),
          ((4097, 4095), torch.float16), ((6723, 3971), torch.float16), ((59514, 1632), torch.float16),
          ((100003, 3001), torch.float32), ((16384, 16384), torch.float32), ((12345, 6789), torch.float32),
          ((200003, 1001), torch.int8), ((30011, 5003), torch.float64)]

ap = argparse.ArgumentParser()
ap.add_argument("--groups", type=int, nargs="+", default=[1, 4, 8, 16])
ap.add_argument("--json")
args = ap.parse_args()
rows = []
for shape, dtype in SHAPES:
    a = (torch.randn(shape, device="cuda") * 100).to(dtype)
    b = torch.empty_like(a)
    want = a.t().contiguous()
    fns = {"torch": lambda: a.t().contiguous(), "copy": lambda: b.copy_(a)}
    shipped = (cuda_t.band_width, triton_t.WORDS_BAND)
    for g in [None, *args.groups]:
        cuda_t.band_width = shipped[0] if g is None else (lambda tiles_r, g=g: g)
        triton_t.WORDS_BAND = shipped[1] if g is None else g
        for name, mod in (("cuda", cuda_t), ("triton", triton_t)):
            mod._PLANS._plans.clear()
            fn = mod._PLANS.get((a,), None, None).run  # (the plan made at this band width)
            out = torch.empty_like(want)
            fn(a, out)
            assert torch.equal(out, want), (shape, name, g)
            fns[f"{name}/{g or 'shipped'}"] = (lambda fn=fn, out=out: fn(a, out))
    cuda_t.band_width, triton_t.WORDS_BAND = shipped
    times = dict(zip(fns, (t.median_ms for t in time_interleaved(list(fns.values()), warmup_ms=5, rep_ms=15))))
    row = {"shape": shape, "dtype": str(dtype)[6:], "ms": times,
           "variants": {"cuda": cuda_t.pick_variant(a), "triton": triton_t.pick_variant(a)}}
    rows.append(row)
    print(f"{shape} {row['dtype']} ({row['variants']['cuda']}, {row['variants']['triton']}): x copy "
          + " ".join(f"{k} {times['copy'] / v:.2f}" for k, v in times.items() if k != "copy"), flush=True)
    del a, b, want
    torch.cuda.empty_cache()
if args.json:
    json.dump({"device": torch.cuda.get_device_name(), "command": "lab/probe_tile_bands.py", "rows": rows},
              open(args.json, "w"), indent=1)
