#!/usr/bin/env python3
"""compare-torch.py -- attn against PyTorch's scaled_dot_product_attention on
identical inputs, each SDPA backend separately, with the same FLOP count.

    tools/compare-torch.py [--lib build/libattn.so] [--device SEL]
                           [--cases plain,noncausal,lengths,mask,mask-f16,window]
                           [--dtype f32,f16,bf16] [--batch N --q-heads N
                           --kv-heads N --head-dim N --seq N --window N]
                           [--torch-device cpu|cuda] [--backends LIST]
                           [--bench REPS] [--json FILE]

Q, K and V are drawn once (torch.rand, --seed) and rounded to each storage
type of --dtype; attn reads those very bits through ctypes (attn_forward on
OpenCL buffers, GQA as it is) and PyTorch computes on them on
--torch-device (default cuda where torch has it, else cpu). The cases:
plain (causal), noncausal, lengths (causal, per-batch valid lengths, odd
entries left-padded, even right-padded; pad rows are not compared), mask
(an additive f32 mask with -inf blocks, non-causal), mask-f16 (the mask
stored in f16) and window (causal, each query's own key and the --window
before it). Every output, attn's
and each backend's, is compared with a float64 reference computed on the
torch device (the CPU reference's math: softmax in float64, a row with no
visible key is zero) and reported as its largest difference and as a
share of the DESIGN tolerance of the type (attn_tolerance: |a - r| <= atol
+ rtol |r|); the exit status is 1 when attn's is over it.

The backends (--backends, default all): default (SDPA's own choice), flash,
efficient, cudnn and math, each forced through torch.nn.attention.sdpa_kernel
(torch >= 2.3) or torch.backends.cuda.sdp_kernel (2.0 to 2.2); one that
cannot run the case says why (torch's warning), and default says which it
picked where torch tells. A backend without GQA gets K/V expanded to the
query heads, and one refusing an f32 mask with a 16-bit query gets it cast
(each said in its row). Where SDPA is missing (torch < 2.0, Debian's
1.13) the one runner is matmul: softmax(scale Q K^T + mask) V in float32.
With --bench REPS every runner is timed REPS times, interleaved (one timing
of each in turn, after a warm-up; attn waited for with clFinish, torch with
its device's synchronize; a call shorter than TIMED_MS repeated back to
back within a timing, calls_per_timing in the row): median, min and max ms
a call and TFLOP/s at the median, 4 D flops per visible query-key pair for
all. --json FILE writes {"run": the shape,
seed, torch and devices, "rows": one per runner and case} after every case,
so a run stopped early keeps what finished; a case that fails (attn's or
torch's error) is a row of its own, and the others still run.
Needs Python 3 and PyTorch; --help works without it.
"""
import argparse
import ctypes as C
import json
import math
import os
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = {"f32": 0, "f16": 1, "bf16": 2}  # attn_dtype
CL_MEM_READ_WRITE, CL_MEM_COPY_HOST_PTR = 1, 1 << 5
CASES = ("plain", "noncausal", "lengths", "mask", "mask-f16", "window")
BACKENDS = ("default", "flash", "efficient", "cudnn", "math")
TIMED_MS, MAX_CALLS = 2.0, 100  # a timing holds at least this long (or this many calls)


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


class Lengths(C.Structure):  # attn_lengths
    _fields_ = [("q_start", C.POINTER(C.c_int)), ("q_len", C.POINTER(C.c_int)),
                ("kv_start", C.POINTER(C.c_int)), ("kv_len", C.POINTER(C.c_int))]


def parse_args(argv):
    # the docstring's paragraphs: the description, the usage (argparse's
    # own), then the rest
    paras = __doc__.split("\n\n")
    ap = argparse.ArgumentParser(description=paras[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(paras[2:]))
    ap.add_argument("--lib", default=os.path.join(HERE, "..", "build", "libattn.so"))
    ap.add_argument("--device", default="", help="attn's device selector (as ATTN_DEVICE)")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--dtype", default="f32", help="storage types, from f32,f16,bf16")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--q-heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--window", type=int, default=64, help="the window case's left keys")
    ap.add_argument("--torch-device", help="default: cuda where torch has it, else cpu")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--bench", type=int, default=0, metavar="REPS")
    ap.add_argument("--json", metavar="FILE",
                    help='writes {"run": {...}, "rows": [...]} (below)')
    ap.add_argument("--seed", type=int, default=20240501)
    a = ap.parse_args(argv)
    for name, known in (("cases", CASES), ("backends", BACKENDS), ("dtype", tuple(DTYPES))):
        got = [c for c in getattr(a, name).split(",") if c]
        bad = [c for c in got if c not in known]
        if bad or not got:
            ap.error("--%s wants names from %s, not %s" % (name, ",".join(known), bad or "''"))
        setattr(a, name, got)
    for name in ("batch", "q_heads", "kv_heads", "head_dim", "seq", "window"):
        if getattr(a, name) < 1:
            ap.error("--%s must be positive" % name.replace("_", "-"))
    if a.q_heads % a.kv_heads:
        ap.error("--q-heads must be a multiple of --kv-heads")
    if a.bench < 0:
        ap.error("--bench must be 0 or more")
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
            C.POINTER(Lengths), C.c_void_p, C.c_void_p]
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

    def buffer(self, t):
        """A device copy of the contiguous CPU tensor t (None: t's size, unset)."""
        err = C.c_int()
        n = t.numel() * t.element_size()
        ptr = C.c_void_p(t.data_ptr())
        b = self.cl.clCreateBuffer(C.c_void_p(self.lib.attn_context_cl_context(self.ctx)),
                                   CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n, ptr,
                                   C.byref(err))
        if err.value:
            raise RuntimeError("clCreateBuffer of %d bytes: %d" % (n, err.value))
        self.buffers.append(b)
        return b

    def read(self, buf, t):
        """The buffer's bytes into the contiguous CPU tensor t."""
        n = t.numel() * t.element_size()
        err = self.cl.clEnqueueReadBuffer(self.queue, buf, 1, 0, n, C.c_void_p(t.data_ptr()), 0,
                                          None, None)
        if err:
            raise RuntimeError("clEnqueueReadBuffer: %d" % err)
        return t

    def tolerance(self, dtype):
        atol, rtol = C.c_double(), C.c_double()
        self.lib.attn_tolerance(DTYPES[dtype], C.byref(atol), C.byref(rtol))
        return atol.value, rtol.value

    def release_buffers(self):
        for b in self.buffers:
            self.cl.clReleaseMemObject(b)
        self.buffers = []

    def close(self):
        self.release_buffers()
        self.lib.attn_context_release(self.ctx)


class Case:
    """One case in one storage type: its inputs (qkv, drawn once for all
    cases, as CPU tensors in the type), its visibility (allowed: bool [B, 1,
    S, S]), additive mask, valid rows ([B, S] bool) and lengths; built with
    torch on the CPU (gen: uniform [0, 1) of a shape)."""

    def __init__(self, torch, a, name, dtype, qkv, gen):
        B, Hq, S, D = a.batch, a.q_heads, a.seq, a.head_dim
        tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
        self.name, self.dtype, self.tdt = name, dtype, tdt
        self.q, self.k, self.v = (x.to(tdt).contiguous() for x in qkv)
        r = torch.arange(S).view(S, 1)
        c = torch.arange(S).view(1, S)
        self.causal = name in ("plain", "lengths", "window")
        self.additive = None  # [S, S] float32 (the stored values), or None
        self.mask_dtype = None
        self.lengths = None  # (q_start, q_len, kv_start, kv_len) lists, or None
        self.rows = torch.ones(B, S, dtype=torch.bool)
        allowed = (c <= r) if self.causal else torch.ones(S, S, dtype=torch.bool)
        if name == "window":
            allowed = allowed & (c >= r - a.window)
        if name in ("mask", "mask-f16"):
            # random values in (-2, 0] with -inf 16 x 16 blocks off the diagonal
            hidden = (gen((S // 16 + 1, S // 16 + 1)) < 0.3)
            hidden.fill_diagonal_(False)
            hidden = hidden.repeat_interleave(16, 0)[:S].repeat_interleave(16, 1)[:, :S]
            m = -2.0 * gen((S, S))
            m = m.masked_fill(hidden, -math.inf)
            self.mask_dtype = "f16" if name == "mask-f16" else "f32"
            if name == "mask-f16":
                m = m.half().float()
            self.additive = m.contiguous()
            allowed = ~hidden
        allowed = allowed.view(1, 1, S, S).expand(B, 1, S, S)
        if name == "lengths":
            lens = [max(1, S - (b * S) // (2 * B) - (b % 3)) for b in range(B)]
            starts = [S - n if b % 2 else 0 for b, n in enumerate(lens)]
            self.lengths = (starts, lens, starts, lens)
            per = []
            for b in range(B):
                s0, n = starts[b], lens[b]
                valid = (r >= s0) & (r < s0 + n) & (c >= s0) & (c < s0 + n)
                per.append((valid & (c <= r)).view(1, 1, S, S))
                self.rows[b] = (torch.arange(S) >= s0) & (torch.arange(S) < s0 + n)
            allowed = torch.cat(per, 0)
        self.allowed = allowed  # [B, 1, S, S]
        self.pairs = int(allowed.sum().item()) * Hq
        self.flops = 4.0 * D * self.pairs


def attn_runner(at, a, case):
    """attn_forward on the case: (run, output as float32 CPU tensor)."""
    torch = sys.modules["torch"]
    B, Hq, Hkv, S, D = a.batch, a.q_heads, a.kv_heads, a.seq, a.head_dim
    bq, bk, bv = at.buffer(case.q), at.buffer(case.k), at.buffer(case.v)
    out = torch.zeros(B, Hq, S, D, dtype=case.tdt)
    bo = at.buffer(out)
    ten = lambda b, h: Tensor(b, 0, h * S * D, S * D, D)
    tq, tk, tv, to = ten(bq, Hq), ten(bk, Hkv), ten(bv, Hkv), ten(bo, Hq)
    p = Problem(batch=B, q_heads=Hq, kv_heads=Hkv, head_dim=D, q_len=S, kv_len=S,
                dtype=DTYPES[case.dtype], causal=1 if case.causal else 0)
    keep = []  # what the problem points at
    if case.additive is not None:
        stored = case.additive.half() if case.mask_dtype == "f16" else case.additive
        host = case.additive.contiguous()
        keep += [host]
        p.mask = Mask(at.buffer(stored.contiguous()), C.cast(host.data_ptr(), C.POINTER(C.c_float)),
                      DTYPES[case.mask_dtype], 0, 0, 0, S, 1)
    if case.name == "window":
        p.use_window, p.window_left, p.window_right = 1, a.window, 0
    lens = None
    if case.lengths is not None:
        arrs = [(C.c_int * B)(*x) for x in case.lengths]
        keep += arrs
        lens = Lengths(*arrs)

    def run():  # enqueues; the timing loop waits with clFinish
        at.check(at.lib.attn_forward(at.ctx, C.byref(p), C.byref(tq), C.byref(tk), C.byref(tv),
                                     C.byref(to), C.byref(lens) if lens else None, None, None),
                 "attn_forward")

    run()
    at.cl.clFinish(at.queue)
    got = at.read(bo, torch.empty(B, Hq, S, D, dtype=case.tdt)).float()
    run.keep = keep
    return run, got


def torch_runners(torch, a, case, dev):
    """name -> (run, output float32 CPU tensor, note) for each backend that
    runs the case, and name -> why for each that does not."""
    q, k, v = case.q.to(dev), case.k.to(dev), case.v.to(dev)
    g = a.q_heads // a.kv_heads
    kx, vx = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    masks = [(None, "")]
    if case.additive is not None:  # the f32 values attn and the reference use; else cast
        masks = [(case.additive.to(dev), ""),
                 (case.additive.to(dev, q.dtype), "mask cast to %s" % case.dtype)]
    elif case.name in ("window", "lengths"):
        # a dense [B,1,S,S] bool mask: SDPA's masked path over every pair,
        # not FlashAttention's variable-length or sliding-window kernels
        masks = [(case.allowed.to(dev), "dense bool mask")]
    causal = case.name == "plain"  # bottom-right = top-left when q_len == kv_len
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    ok, why = {}, {}
    if sdpa is None:
        scale = 1.0 / math.sqrt(a.head_dim)
        vis = case.allowed.to(dev)
        am = masks[0][0]

        def matmul():
            s = (q.float() @ kx.float().transpose(-1, -2)) * scale
            if am is not None and am.dtype != torch.bool:
                s = s + am.float()
            s = s.masked_fill(~vis, -math.inf)
            return torch.nan_to_num(torch.softmax(s, -1)) @ vx.float()
        out = matmul()
        ok["matmul"] = (matmul, out.float().cpu(), "no SDPA in torch %s: float32" % torch.__version__)
        return ok, why
    forced = backend_contexts(torch)
    for name in a.backends:
        if name != "default" and name not in forced:
            why[name] = "not in torch %s" % torch.__version__
            continue
        reasons = []
        # native GQA first (torch >= 2.5), then K/V expanded; the f32 mask
        # first, then cast to the query's type
        tries = [(gqa, am, mnote) for gqa in ((True, False) if g > 1 else (False,))
                 for am, mnote in masks]
        for gqa, am, mnote in tries:
            kk, vv = (k, v) if gqa else (kx, vx)
            extra = {"enable_gqa": True} if gqa else {}

            def run(kk=kk, vv=vv, am=am, extra=extra, name=name):
                if name == "default":
                    return sdpa(q, kk, vv, attn_mask=am, is_causal=causal, **extra)
                with forced[name]():
                    return sdpa(q, kk, vv, attn_mask=am, is_causal=causal, **extra)
            # a backend that cannot run says why in warnings, then raises
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                try:
                    out = run()
                    sync(torch, dev)
                except Exception as e:  # any backend's refusal: try the next way, then say why
                    told = [str(w.message).strip().split("\n")[0] for w in said]
                    reasons.append((told[0] if told else str(e).strip().split("\n")[0])[:200])
                    continue
            note = "; ".join(x for x in ("" if gqa or g == 1 else "K/V expanded", mnote) if x)
            if name == "default":
                picked = default_choice(torch, q, kk, vv, am, causal, gqa)
                note = "; ".join(x for x in (picked, note) if x)
            ok[name] = (run, out.float().cpu(), note)
            break
        else:
            why[name] = reasons[-1] if reasons else "did not run"
    return ok, why


def default_choice(torch, q, k, v, am, causal, gqa):
    """Which backend SDPA's own choice ran ("" where torch does not say)."""
    try:
        from torch.nn.attention import SDPBackend
        try:  # asked without enable_gqa, a GQA call rules out every fused kernel
            choice = torch._fused_sdp_choice(q, k, v, am, 0.0, causal, enable_gqa=gqa)
        except TypeError:  # before torch 2.5: no GQA in SDPA, nor in the question
            if gqa:
                return ""
            choice = torch._fused_sdp_choice(q, k, v, am, 0.0, causal)
        return "picked %s" % SDPBackend(choice).name
    except Exception:  # a private function: absent or changed in some versions
        return ""


def backend_contexts(torch):
    """backend name -> a function returning the context that forces it."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # torch >= 2.3
        names = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                 "cudnn": "CUDNN_ATTENTION", "math": "MATH"}
        return {n: (lambda b=getattr(SDPBackend, m): sdpa_kernel(b))
                for n, m in names.items() if hasattr(SDPBackend, m)}
    except ImportError:
        pass
    ctx = getattr(torch.backends.cuda, "sdp_kernel", None)  # torch 2.0 - 2.2
    if ctx is None:
        return {}
    flags = {"flash": (1, 0, 0), "efficient": (0, 1, 0), "math": (0, 0, 1)}

    def force(f):
        kw = dict(enable_flash=bool(f[0]), enable_mem_efficient=bool(f[1]), enable_math=bool(f[2]))
        try:
            return ctx(enable_cudnn=False, **kw)  # 2.2 has cuDNN on by default
        except TypeError:
            return ctx(**kw)
    return {n: (lambda f=f: force(f)) for n, f in flags.items()}


def sync(torch, dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def reference(torch, a, case, dev):
    """The case in float64 on dev, a few heads at a time: [B, Hq, S, D]."""
    B, Hq, S, D = a.batch, a.q_heads, a.seq, a.head_dim
    g = a.q_heads // a.kv_heads
    out = torch.zeros(B, Hq, S, D, dtype=torch.float64, device=dev)
    step = max(1, min(Hq, (1 << 27) // (S * S)))  # about 1 GiB of float64 scores
    scale = 1.0 / math.sqrt(D)
    add = case.additive.to(dev, torch.float64) if case.additive is not None else None
    for b in range(B):
        vis = case.allowed[b, 0].to(dev)
        for h0 in range(0, Hq, step):
            hs = list(range(h0, min(Hq, h0 + step)))
            q = case.q[b, hs].to(dev).double()
            k = case.k[b, [h // g for h in hs]].to(dev).double()
            v = case.v[b, [h // g for h in hs]].to(dev).double()
            s = (q @ k.transpose(-1, -2)) * scale
            if add is not None:
                s = s + add
            s = s.masked_fill(~vis, -math.inf)
            out[b, h0:h0 + len(hs)] = torch.nan_to_num(torch.softmax(s, -1)) @ v
    return out


def error(torch, out, ref, rows, atol, rtol):
    """(largest |out - ref|, its largest share of the tolerance) over valid rows."""
    keep = rows.view(rows.shape[0], 1, rows.shape[1], 1).to(ref.device)
    d = (out.to(ref.device).double() - ref).abs()
    d = torch.where(torch.isfinite(d), d, torch.full_like(d, math.inf))
    d = torch.where(keep, d, torch.zeros_like(d))
    share = d / (atol + rtol * ref.abs())
    return d.max().item(), share.max().item()


def finite(x):
    """x for JSON: None for inf and NaN, which JSON has not"""
    return x if isinstance(x, float) and math.isfinite(x) or not isinstance(x, float) else None


def run_case(torch, at, a, case, dev, rows):
    """One case in one type: every runner checked against the reference and
    timed; rows gets a row each. Returns whether attn's is within tolerance."""
    atol, rtol = at.tolerance(case.dtype)
    ref = reference(torch, a, case, dev)
    runners = {}
    run, got = attn_runner(at, a, case)
    runners["attn"] = (run, got, "")
    good, why = torch_runners(torch, a, case, dev)
    runners.update(good)
    times = {n: [] for n in runners}
    finish = {n: (lambda: at.cl.clFinish(at.queue)) if n == "attn" else (lambda: sync(torch, dev))
              for n in runners}

    def timed(n, calls):
        """ms a call, over calls back to back between two waits"""
        finish[n]()
        t0 = time.perf_counter()
        for _ in range(calls):
            runners[n][0]()
        finish[n]()
        return (time.perf_counter() - t0) * 1e3 / calls
    # a short call is repeated back to back, so that the wait and Python's
    # launch around it (tens of microseconds) do not count as its time
    calls = {n: max(1, min(MAX_CALLS, math.ceil(TIMED_MS / max(timed(n, 1), 1e-3))))
             for n in (runners if a.bench else ())}
    for _ in range(a.bench):  # interleaved: one timing of each in turn
        for n in runners:
            times[n].append(timed(n, calls[n]))
    ok = True
    for n, (_, out, note) in runners.items():
        worst, share = error(torch, out, ref, case.rows, atol, rtol)
        row = {"case": case.name, "dtype": case.dtype, "runner": n, "visible_pairs": case.pairs,
               "max_error": finite(worst), "error_share": finite(share),
               "within_tolerance": share <= 1, "note": note}
        line = "%-9s %-4s %-9s max |diff| %.3e = %.3g of tolerance" % (
            case.name, case.dtype, n, worst, share)
        if times[n]:
            t = times[n]
            med = statistics.median(t)
            row.update(median_ms=med, min_ms=min(t), max_ms=max(t), reps=len(t),
                       calls_per_timing=calls[n], tflops=case.flops / med / 1e9)
            line += "; %.3f ms (%.3f..%.3f) %.3g TFLOP/s" % (med, min(t), max(t), row["tflops"])
        print(line + ("; " + note if note else ""), flush=True)
        rows.append(row)
        ok &= n != "attn" or share <= 1
    for n, reason in why.items():
        print("%-9s %-4s %-9s not run: %s" % (case.name, case.dtype, n, reason), flush=True)
        rows.append({"case": case.name, "dtype": case.dtype, "runner": n, "not_run": reason})
    return ok


def main(argv):
    a = parse_args(argv)
    try:
        import torch
    except ImportError:
        sys.exit("compare-torch.py: PyTorch is not installed here (Debian: apt-get install "
                 "python3-torch; elsewhere: pip install torch)")
    if a.torch_device is None:
        a.torch_device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(a.torch_device)
    at = Attn(a.lib, a.device)
    # Q, K, V drawn once, on the torch device (fast there), for every case and type
    g = torch.Generator(device=dev).manual_seed(a.seed)
    draw = lambda shape: (torch.rand(*shape, generator=g, device=dev) * 2 - 1).cpu()
    B, Hq, Hkv, S, D = a.batch, a.q_heads, a.kv_heads, a.seq, a.head_dim
    qkv = (draw((B, Hq, S, D)), draw((B, Hkv, S, D)), draw((B, Hkv, S, D)))
    gcpu = torch.Generator().manual_seed(a.seed + 1)
    gen = lambda shape: torch.rand(*shape, generator=gcpu)
    where = str(dev) + (" (%s)" % torch.cuda.get_device_name(dev) if dev.type == "cuda" else "")
    head = {"batch": B, "q_heads": Hq, "kv_heads": Hkv, "head_dim": D, "seq": S,
            "window": a.window, "seed": a.seed, "bench_reps": a.bench, "torch": torch.__version__,
            "torch_device": where, "attn_device": a.device or "(default)",
            "flops_per_pair": 4 * D}
    print("B=%d Hq=%d Hkv=%d D=%d S=%d window %d; torch %s on %s" % (
        B, Hq, Hkv, D, S, a.window, torch.__version__, where), flush=True)
    rows, ok = [], True
    try:
        for dtype in a.dtype:
            atol, rtol = at.tolerance(dtype)
            print("%s: tolerance %g + %g |ref|" % (dtype, atol, rtol), flush=True)
            for name in a.cases:
                try:
                    ok &= run_case(torch, at, a, Case(torch, a, name, dtype, qkv, gen), dev, rows)
                except Exception as e:  # attn's or torch's failure: this case only
                    print("%-9s %-4s failed: %s" % (name, dtype, e), flush=True)
                    rows.append({"case": name, "dtype": dtype, "runner": "attn", "failed": str(e)})
                    ok = False
                at.release_buffers()
                if a.json:  # after every case, so that a killed run keeps what finished
                    with open(a.json + ".part", "w") as f:
                        json.dump({"run": head, "rows": rows}, f, indent=1, allow_nan=False)
                    os.replace(a.json + ".part", a.json)
    finally:
        at.close()
    print("attn: %s" % ("every case within tolerance" if ok else "OVER tolerance or failed"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
