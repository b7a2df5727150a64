#!/usr/bin/env python3
"""ab-builds.py -- the speed of one libattn.so build against another on the
DESIGN prefill and decode sets, timed call by call in one process.

    tools/dev/ab-builds.py OLD/libattn.so NEW/libattn.so [--only REGEX]
                           [--repeats N] [--scale K]

Compiles ab_call.c (next to this script) with cc, then runs each case twice
per repeat: once with OLD set up first and once with NEW first. The library
set up second measured up to 15% slower by the placement of its buffers
alone, so each repeat's ratio is sqrt(r_old_first / r_new_first), which
cancels that bias. Prints NEW/OLD speed per case: the median over repeats
and the range. A library may be given as LIB@FOLDER to read its kernel
sources from FOLDER. Built-in parameters (the tuning databases are set to a
path that does not exist); set ATTN_PARAMS to force a family in both.
A build against itself gives about 0.94..1.07 per repeat on a shared
2-core machine; medians of 3 repeats within 0.98..1.03.
"""
import argparse, math, os, re, statistics, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("old"); ap.add_argument("new")
ap.add_argument("--only", default="", help='regex over "decode f32 kv1024"-style case names')
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--scale", type=int, default=1, help="more pairs per process")
a = ap.parse_args()

exe = os.path.join(tempfile.mkdtemp(prefix="ab-builds-"), "ab_call")
subprocess.run(["cc", "-O2", "-std=c11", "-I" + os.path.join(here, "..", "..", "include"),
                os.path.join(here, "ab_call.c"), "-o", exe, "-ldl", "-lOpenCL"], check=True)
env = dict(os.environ, ATTN_TUNING_DB="/nonexistent", ATTN_SYSTEM_TUNING_DB="/nonexistent")

cases = []  # (mode, dtype, kv_len, q_len, pairs, [batch, q_heads, kv_heads, head_dim])
for t in ("f32", "f16"):
    cases += [("decode", t, kv, 1, n * a.scale, []) for kv, n in ((1024, 600), (4096, 200), (16384, 60))]
for t in ("f32", "f16"):
    cases += [("prefill", t, s, s, 3000 * a.scale // s + 10, ["1", "8", "2", "64"]) for s in (512, 1024, 2048, 4096)]
    cases += [("prefill", t, s, s, 600 * a.scale // s + 6, ["1", "32", "8", "128"]) for s in (1024, 2048)]

def ratio(first, second, c):
    r = subprocess.run([exe, first, second, c[0], c[1], str(c[2]), str(c[3]), str(c[4])] + c[5],
                       env=env, capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+)", r.stdout)
    if not m:
        sys.exit("ab_call failed: " + r.stderr.strip())
    return float(m.group(1))

print("case                               NEW/OLD speed: median [range] over %d repeats" % a.repeats)
for c in cases:
    name = "%s %s kv%d" % c[:3]
    if not re.search(a.only, name):
        continue
    rs = [math.sqrt(ratio(a.old, a.new, c) / ratio(a.new, a.old, c)) for _ in range(a.repeats)]
    shape = "B=%s Hq=%s Hkv=%s D=%s" % tuple(c[5]) if c[5] else "B=4 Hq=32 Hkv=8 D=128"
    print("%-7s %-4s %-21s S_kv=%-6d %.3f [%.3f..%.3f]" % (c[0], c[1], shape, c[2],
          statistics.median(rs), min(rs), max(rs)), flush=True)
