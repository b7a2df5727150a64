/* mem_view.c -- resolves sub-buffers to the buffer they were cut from, so
 * that the argument checks see aliasing through clCreateSubBuffer (an out
 * cut from the same allocation as k is the same memory as k). */
#include "attention/mem_view.h"

#include <stdint.h>

attn_mem_view attn_mem_view_of(cl_mem m)
{
    attn_mem_view w = {m, 0};
    /* OpenCL forbids a sub-buffer of a sub-buffer, so one step suffices;
     * the bound only guards against a driver that reports a cycle */
    for (int depth = 0; w.root && depth < 8; depth++) {
        cl_mem parent = NULL;
        size_t origin = 0;
        if (clGetMemObjectInfo(w.root, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL) !=
            CL_SUCCESS) {
            w.root = NULL;
            break;
        }
        if (!parent) break;
        if (clGetMemObjectInfo(w.root, CL_MEM_OFFSET, sizeof origin, &origin, NULL) != CL_SUCCESS) {
            w.root = NULL;
            break;
        }
        w.origin += origin;
        w.root = parent;
    }
    return w;
}

/* a + b, or SIZE_MAX where that overflows (an end that far reaches all) */
static size_t add_saturated(size_t a, size_t b)
{
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

int attn_mem_bytes_meet(cl_mem a, size_t a_lo, size_t a_hi, cl_mem b, size_t b_lo, size_t b_hi)
{
    if (a_lo >= a_hi || b_lo >= b_hi) return 0;
    const attn_mem_view x = attn_mem_view_of(a), y = attn_mem_view_of(b);
    if (!x.root || x.root != y.root) return 0;
    return add_saturated(x.origin, a_lo) < add_saturated(y.origin, b_hi) &&
           add_saturated(y.origin, b_lo) < add_saturated(x.origin, a_hi);
}
