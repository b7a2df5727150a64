#!/usr/bin/env python3
"""compare-torch.py -- attn against PyTorch's scaled_dot_product_attention on
the same inputs: plain causal (the control), an additive mask (f32 and f16)
and a sliding window given to SDPA as a mask.

    tools/compare-torch.py [--lib build/libattn.so] [--device SEL]
                           [--cases plain,mask,mask-f16,window]
                           [--dtype f32|f16] [--batch N --q-heads N
                           --kv-heads N --head-dim N --seq N --window N]
                           [--torch-device cpu|cuda] [--bench REPS]
                           [--against torch|reference]

Calls libattn through ctypes (attn_forward on OpenCL buffers) and PyTorch on
the inputs rounded through the storage type, so both see the same numbers.
Each case prints the largest difference against the DESIGN tolerance of the
type (attn_tolerance: |a - t| <= atol + rtol |t|); the exit status is 1 when
one is over it. With --bench REPS each case also times both sides (median of
REPS, after a warm-up; attn with clFinish, torch with its device's
synchronize). --against reference compares with attn's own CPU reference
instead of PyTorch: the same cases without torch, which checks this script's
plumbing where torch is not installed. Where SDPA is missing (torch < 2.0)
the torch side is softmax(scale Q K^T + mask) V written out in float64.
Needs Python 3 and, for --against torch, PyTorch; --help works without it.
"""
import argparse
import ctypes as C
import math
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
F32, F16 = 0, 1  # attn_dtype
CL_MEM_READ_WRITE, CL_MEM_COPY_HOST_PTR = 1, 1 << 5


class Tensor(C.Structure):  # attn_tensor
    _fields_ = [("buffer", C.c_void_p), ("offset", C.c_size_t), ("stride_batch", C.c_size_t),
                ("stride_head", C.c_size_t), ("stride_seq", C.c_size_t)]


class Mask(C.Structure):  # attn_mask
    _fields_ = [("buffer", C.c_void_p), ("host", C.POINTER(C.c_float)), ("dtype", C.c_int),
                ("offset", C.c_size_t), ("stride_batch", C.c_size_t),
                ("stride_head", C.c_size_t), ("stride_q", C.c_size_t),
                ("stride_kv", C.c_size_t), ("version", C.c_ulong)]


class Problem(C.Structure):  # attn_problem, in include/attn/core.h's order
    _fields_ = [("batch", C.c_int), ("q_heads", C.c_int), ("kv_heads", C.c_int),
                ("head_dim", C.c_int), ("q_len", C.c_int), ("kv_len", C.c_int),
                ("dtype", C.c_int), ("causal", C.c_int), ("scale", C.c_float),
                ("use_window", C.c_int), ("window_left", C.c_int), ("window_right", C.c_int),
                ("softcap", C.c_float), ("sinks", C.POINTER(C.c_float)),
                ("sinks_buffer", C.c_void_p), ("alibi_slopes", C.POINTER(C.c_float)),
                ("alibi_max_bias", C.c_float), ("mask", Mask), ("packed", C.c_int)]


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[10:]))
    ap.add_argument("--lib", default=os.path.join(HERE, "..", "build", "libattn.so"))
    ap.add_argument("--device", default="", help="attn's device selector (as ATTN_DEVICE)")
    ap.add_argument("--cases", default="plain,mask,mask-f16,window")
    ap.add_argument("--dtype", choices=("f32", "f16"), default="f32")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--q-heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--window", type=int, default=64, help="the window case's left keys")
    ap.add_argument("--torch-device", default="cpu")
    ap.add_argument("--bench", type=int, default=0, metavar="REPS")
    ap.add_argument("--against", choices=("torch", "reference"), default="torch")
    ap.add_argument("--seed", type=int, default=20240501)
    a = ap.parse_args(argv)
    known = {"plain", "mask", "mask-f16", "window"}
    a.cases = [c for c in a.cases.split(",") if c]
    bad = [c for c in a.cases if c not in known]
    if bad or not a.cases:
        ap.error("--cases wants names from %s, not %s" % (",".join(sorted(known)), bad or "''"))
    for name in ("batch", "q_heads", "kv_heads", "head_dim", "seq", "window"):
        if getattr(a, name) < 1:
            ap.error("--%s must be positive" % name.replace("_", "-"))
    if a.q_heads % a.kv_heads:
        ap.error("--q-heads must be a multiple of --kv-heads")
    return a


class Attn:
    """libattn and OpenCL through ctypes: a context, buffers, attn_forward."""

    def __init__(self, lib, device):
        self.cl = C.CDLL("libOpenCL.so.1")
        self.lib = C.CDLL(lib)
        L, cl = self.lib, self.cl
        L.attn_context_create.argtypes = [C.c_char_p, C.POINTER(C.c_void_p)]
        for f in ("attn_context_cl_context", "attn_context_queue"):
            getattr(L, f).restype, getattr(L, f).argtypes = C.c_void_p, [C.c_void_p]
        L.attn_last_error.restype, L.attn_last_error.argtypes = C.c_char_p, [C.c_void_p]
        L.attn_status_name.restype, L.attn_status_name.argtypes = C.c_char_p, [C.c_int]
        L.attn_forward.argtypes = [C.c_void_p, C.POINTER(Problem)] + [C.POINTER(Tensor)] * 4 + [
            C.c_void_p, C.c_void_p, C.c_void_p]
        fp = C.POINTER(C.c_float)
        L.attn_reference_forward.argtypes = [C.POINTER(Problem), fp, fp, fp, fp, C.c_void_p,
                                             C.c_void_p]
        for f in ("attn_convert_from_f32", "attn_convert_to_f32"):
            getattr(L, f).argtypes = [C.c_int, C.c_void_p, C.c_void_p, C.c_size_t]
        L.attn_tolerance.argtypes = [C.c_int, C.POINTER(C.c_double), C.POINTER(C.c_double)]
        L.attn_context_release.argtypes = [C.c_void_p]
        cl.clCreateBuffer.restype = C.c_void_p
        cl.clCreateBuffer.argtypes = [C.c_void_p, C.c_uint64, C.c_size_t, C.c_void_p,
                                      C.POINTER(C.c_int)]
        cl.clEnqueueReadBuffer.argtypes = [C.c_void_p, C.c_void_p, C.c_uint, C.c_size_t,
                                           C.c_size_t, C.c_void_p, C.c_uint, C.c_void_p,
                                           C.c_void_p]
        cl.clReleaseMemObject.argtypes = [C.c_void_p]
        cl.clFinish.argtypes = [C.c_void_p]
        self.ctx = C.c_void_p()
        st = L.attn_context_create(device.encode() or None, C.byref(self.ctx))
        if st:
            sys.exit("attn_context_create: %s: %s" % (L.attn_status_name(st).decode(),
                                                      L.attn_last_error(None).decode()))
        self.queue = L.attn_context_queue(self.ctx)
        self.buffers = []

    def check(self, st, what):
        if st:
            raise RuntimeError("%s: %s: %s" % (what, self.lib.attn_status_name(st).decode(),
                                               self.lib.attn_last_error(self.ctx).decode()))

    def rounded(self, dtype, values):
        """values (floats) as the type stores them: (raw ctypes array, floats)."""
        n = len(values)
        src = (C.c_float * n)(*values)
        raw = (C.c_uint16 * n)() if dtype == F16 else (C.c_float * n)()
        back = (C.c_float * n)()
        self.lib.attn_convert_from_f32(dtype, src, raw, n)
        self.lib.attn_convert_to_f32(dtype, raw, back, n)
        return raw, back

    def buffer(self, raw):
        err = C.c_int()
        b = self.cl.clCreateBuffer(attn_cl_context(self), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                   C.sizeof(raw), raw, C.byref(err))
        if err.value:
            raise RuntimeError("clCreateBuffer of %d bytes: %d" % (C.sizeof(raw), err.value))
        self.buffers.append(b)
        return b

    def read(self, dtype, buf, n):
        raw = (C.c_uint16 * n)() if dtype == F16 else (C.c_float * n)()
        self.cl.clEnqueueReadBuffer(self.queue, buf, 1, 0, C.sizeof(raw), raw, 0, None, None)
        out = (C.c_float * n)()
        self.lib.attn_convert_to_f32(dtype, raw, out, n)
        return out

    def tolerance(self, dtype):
        atol, rtol = C.c_double(), C.c_double()
        self.lib.attn_tolerance(dtype, C.byref(atol), C.byref(rtol))
        return atol.value, rtol.value

    def close(self):
        for b in self.buffers:
            self.cl.clReleaseMemObject(b)
        self.lib.attn_context_release(self.ctx)


def attn_cl_context(a):
    return a.lib.attn_context_cl_context(a.ctx)


def make_mask(case, a, rng):
    """The case's [S][S] additive mask (floats; None for none): random values
    in [-2, 0] with 16 x 16 blocks of -inf off the diagonal blocks."""
    S = a.seq
    if case not in ("mask", "mask-f16"):
        return None
    m = [0.0] * (S * S)
    hidden = {}
    for r in range(S):
        for c in range(S):
            blk = (r // 16, c // 16)
            if blk not in hidden:
                hidden[blk] = blk[0] != blk[1] and rng.random() < 0.3
            m[r * S + c] = -math.inf if hidden[blk] else -2.0 * rng.random()
    return m


def window_allowed(a, r, c):
    return c <= r and c >= r - a.window  # causal, keys r - window .. r


def torch_side(torch, a, case, q, k, v, mask):
    """PyTorch's output for the case (flat floats, [B][Hq][S][D])."""
    B, Hq, Hkv, S, D = a.batch, a.q_heads, a.kv_heads, a.seq, a.head_dim
    dev = torch.device(a.torch_device)
    T = lambda x, h: torch.tensor(list(x), dtype=torch.float32, device=dev).view(B, h, S, D)
    tq, tk, tv = T(q, Hq), T(k, Hkv), T(v, Hkv)
    g = Hq // Hkv
    tk, tv = tk.repeat_interleave(g, dim=1), tv.repeat_interleave(g, dim=1)
    am, causal = None, case == "plain"
    if mask is not None:
        am = torch.tensor(list(mask), dtype=torch.float32, device=dev).view(S, S)
    elif case == "window":
        am = torch.tensor([[window_allowed(a, r, c) for c in range(S)] for r in range(S)],
                          dtype=torch.bool, device=dev)
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)

    def run():
        if sdpa is not None:
            return sdpa(tq, tk, tv, attn_mask=am, is_causal=causal and am is None)
        s = (tq.double() @ tk.double().transpose(-1, -2)) / math.sqrt(D)
        if causal:
            s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=dev).triu(1),
                              -math.inf)
        if am is not None:
            s = s.masked_fill(~am, -math.inf) if am.dtype == torch.bool else s + am.double()
        return (torch.softmax(s, -1) @ tv.double()).float()

    out = run()
    ms = []
    for _ in range(a.bench):
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        run()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        ms.append((time.perf_counter() - t0) * 1e3)
    return out.flatten().cpu().tolist(), ms, "sdpa" if sdpa is not None else "math"


def run_case(at, torch, a, case, rng):
    B, Hq, Hkv, S, D = a.batch, a.q_heads, a.kv_heads, a.seq, a.head_dim
    dtype = F16 if a.dtype == "f16" else F32
    nq, nkv = B * Hq * S * D, B * Hkv * S * D
    rq, q = at.rounded(dtype, [rng.uniform(-1, 1) for _ in range(nq)])
    rk, k = at.rounded(dtype, [rng.uniform(-1, 1) for _ in range(nkv)])
    rv, v = at.rounded(dtype, [rng.uniform(-1, 1) for _ in range(nkv)])
    bq, bk, bv = at.buffer(rq), at.buffer(rk), at.buffer(rv)
    bo = at.buffer((C.c_float * nq)() if dtype == F32 else (C.c_uint16 * nq)())
    ten = lambda b, h: Tensor(b, 0, h * S * D, S * D, D)
    tq, tk, tv, to = ten(bq, Hq), ten(bk, Hkv), ten(bv, Hkv), ten(bo, Hq)
    p = Problem(batch=B, q_heads=Hq, kv_heads=Hkv, head_dim=D, q_len=S, kv_len=S, dtype=dtype,
                causal=1 if case in ("plain", "window") else 0)
    mask = make_mask(case, a, rng)
    host_mask = None
    if mask is not None:
        mdt = F16 if case == "mask-f16" else F32
        raw, host_mask = at.rounded(mdt, mask)  # the reference and torch see the stored values
        mask = list(host_mask)
        p.mask = Mask(at.buffer(raw), host_mask, mdt, 0, 0, 0, S, 1)
    if case == "window":
        p.use_window, p.window_left, p.window_right = 1, a.window, 0
    fwd = lambda: at.check(at.lib.attn_forward(at.ctx, C.byref(p), C.byref(tq), C.byref(tk),
                                               C.byref(tv), C.byref(to), None, None, None),
                           "attn_forward")
    fwd()
    at.cl.clFinish(at.queue)
    got = at.read(dtype, bo, nq)
    attn_ms = []
    for _ in range(a.bench):
        t0 = time.perf_counter()
        fwd()
        at.cl.clFinish(at.queue)
        attn_ms.append((time.perf_counter() - t0) * 1e3)
    if a.against == "reference":
        ref = (C.c_float * nq)()
        at.check(at.lib.attn_reference_forward(C.byref(p), q, k, v, ref, None, None),
                 "attn_reference_forward")
        want, torch_ms, how = list(ref), [], "attn reference"
    else:
        want, torch_ms, how = torch_side(torch, a, case, q, k, v, mask)
    atol, rtol = at.tolerance(dtype)
    worst, worst_ratio = 0.0, 0.0
    for x, y in zip(got, want):
        e = abs(x - y) if math.isfinite(x) and math.isfinite(y) else math.inf
        worst = max(worst, e)
        worst_ratio = max(worst_ratio, e / (atol + rtol * abs(y)) if math.isfinite(y) else e)
    ok = worst_ratio <= 1
    line = "%-9s %-4s vs %-14s max |diff| %.3e = %.3g of tolerance: %s" % (
        case, a.dtype, how, worst, worst_ratio, "ok" if ok else "OVER")
    if a.bench:
        am = statistics.median(attn_ms)
        line += "; attn %.3f ms" % am
        if torch_ms:
            tm = statistics.median(torch_ms)
            line += ", torch %.3f ms (torch / attn %.2f)" % (tm, tm / am if am else 0)
    print(line, flush=True)
    return ok


def main(argv):
    a = parse_args(argv)
    torch = None
    if a.against == "torch":
        try:
            import torch  # noqa: F811 -- only here, so that --help needs no torch
        except ImportError:
            sys.exit("compare-torch.py: PyTorch is not installed here; install it, or run "
                     "--against reference (attn's CPU reference, no torch)")
    at = Attn(a.lib, a.device)
    rng = random.Random(a.seed)
    print("B=%d Hq=%d Hkv=%d D=%d S=%d window %d, %s%s" % (
        a.batch, a.q_heads, a.kv_heads, a.head_dim, a.seq, a.window, a.dtype,
        ", torch %s on %s" % (torch.__version__, a.torch_device) if torch else ""))
    ok = True
    try:
        for case in a.cases:
            ok &= run_case(at, torch, a, case, rng)
    except RuntimeError as e:
        print("compare-torch.py: %s" % e, file=sys.stderr)
        ok = False
    finally:
        at.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
