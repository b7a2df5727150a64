/* peak.cl -- the device's fp32 FMA throughput, clpeak's method: every
 * work-item runs long chains of fma on PEAK_CHAINS independent vector
 * accumulators (enough to cover the FMA latency), and writes their sum so
 * nothing is optimised away. Used only by attn_device_peak_gflops. */

#ifndef PEAK_WIDTH
#define PEAK_WIDTH 16 /* float vector width: 1, 2, 4, 8 or 16 (CPU: 8-16, GPU: 1-4) */
#endif
#ifndef PEAK_CHAINS
#define PEAK_CHAINS 8 /* independent accumulators per work-item: 1, 2, 4 or 8 */
#endif
#ifndef PEAK_UNROLL
#define PEAK_UNROLL 16 /* fma steps per chain per loop trip, written out: 1, 2, 4, 8 or 16 */
#endif

#if PEAK_WIDTH == 1
#define PEAK_T float
#define PEAK_SUM(v) (v)
#elif PEAK_WIDTH == 2
#define PEAK_T float2
#define PEAK_SUM(v) ((v).s0 + (v).s1)
#elif PEAK_WIDTH == 4
#define PEAK_T float4
#define PEAK_SUM(v) ((v).s0 + (v).s1 + (v).s2 + (v).s3)
#elif PEAK_WIDTH == 8
#define PEAK_T float8
#define PEAK_SUM(v) (PEAK_SUM4((v).lo) + PEAK_SUM4((v).hi))
#elif PEAK_WIDTH == 16
#define PEAK_T float16
#define PEAK_SUM(v) (PEAK_SUM8((v).lo) + PEAK_SUM8((v).hi))
#else
#error "PEAK_WIDTH must be 1, 2, 4, 8 or 16"
#endif
#define PEAK_SUM4(v) ((v).s0 + (v).s1 + (v).s2 + (v).s3)
#define PEAK_SUM8(v) (PEAK_SUM4((v).lo) + PEAK_SUM4((v).hi))

#if PEAK_CHAINS != 1 && PEAK_CHAINS != 2 && PEAK_CHAINS != 4 && PEAK_CHAINS != 8
#error "PEAK_CHAINS must be 1, 2, 4 or 8"
#endif
#if PEAK_UNROLL != 1 && PEAK_UNROLL != 2 && PEAK_UNROLL != 4 && PEAK_UNROLL != 8 && \
    PEAK_UNROLL != 16
#error "PEAK_UNROLL must be 1, 2, 4, 8 or 16"
#endif

/* One step: x = x * m + c on every chain. m and c arrive as arguments, so
 * the compiler cannot fold the chain; with 0 < m < 1 it converges to
 * c / (1 - m) and never overflows or goes denormal. */
#if PEAK_CHAINS >= 8
#define PEAK_STEP8(m, c) \
    x7 = fma(x7, m, c); x6 = fma(x6, m, c); x5 = fma(x5, m, c); x4 = fma(x4, m, c);
#else
#define PEAK_STEP8(m, c)
#endif
#if PEAK_CHAINS >= 4
#define PEAK_STEP4(m, c) x3 = fma(x3, m, c); x2 = fma(x2, m, c);
#else
#define PEAK_STEP4(m, c)
#endif
#if PEAK_CHAINS >= 2
#define PEAK_STEP2(m, c) x1 = fma(x1, m, c);
#else
#define PEAK_STEP2(m, c)
#endif
#define PEAK_STEP(m, c) x0 = fma(x0, m, c); PEAK_STEP2(m, c) PEAK_STEP4(m, c) PEAK_STEP8(m, c)

/* out[get_global_id(0)] receives the sum of the chains. Each work-item
 * performs trips * PEAK_UNROLL * PEAK_CHAINS * PEAK_WIDTH fma, twice as
 * many flops. */
__kernel void attn_peak(__global float *out, const int trips, const float m, const float c)
{
    const float seed = (float)get_global_id(0) * 1e-6f;
    PEAK_T x0 = (PEAK_T)(seed), x1 = x0 + 0.1f, x2 = x0 + 0.2f, x3 = x0 + 0.3f;
    PEAK_T x4 = x0 + 0.4f, x5 = x0 + 0.5f, x6 = x0 + 0.6f, x7 = x0 + 0.7f;
    const PEAK_T mv = (PEAK_T)(m), cv = (PEAK_T)(c);
    for (int t = 0; t < trips; t++) {
#if PEAK_UNROLL >= 16
        PEAK_STEP(mv, cv) PEAK_STEP(mv, cv) PEAK_STEP(mv, cv) PEAK_STEP(mv, cv)
        PEAK_STEP(mv, cv) PEAK_STEP(mv, cv) PEAK_STEP(mv, cv) PEAK_STEP(mv, cv)
#endif
#if PEAK_UNROLL >= 8
        PEAK_STEP(mv, cv) PEAK_STEP(mv, cv) PEAK_STEP(mv, cv) PEAK_STEP(mv, cv)
#endif
#if PEAK_UNROLL >= 4
        PEAK_STEP(mv, cv) PEAK_STEP(mv, cv)
#endif
#if PEAK_UNROLL >= 2
        PEAK_STEP(mv, cv)
#endif
        PEAK_STEP(mv, cv)
    }
    PEAK_T s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
    out[get_global_id(0)] = PEAK_SUM(s);
}
