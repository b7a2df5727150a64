/* mem_view.h -- where a cl_mem's bytes lie (mem_view.c). */
#ifndef ATTN_ATTENTION_MEM_VIEW_H
#define ATTN_ATTENTION_MEM_VIEW_H

#include <CL/cl.h>
#include <stddef.h>

/* A cl_mem as a view of an allocation: a sub-buffer (clCreateSubBuffer) is
 * resolved to the buffer it was cut from, at its byte origin there; any
 * other cl_mem is its own root at origin 0. Overlap checks compare roots,
 * never handles: two sub-buffers of one buffer are one allocation. */
typedef struct attn_mem_view {
    cl_mem root;   /* NULL: m was NULL or not a valid cl_mem */
    size_t origin; /* byte offset of m's first byte in root */
} attn_mem_view;

attn_mem_view attn_mem_view_of(cl_mem m);

/* Whether bytes [a_lo, a_hi) of a and [b_lo, b_hi) of b (offsets within
 * each cl_mem) are the same memory anywhere. */
int attn_mem_bytes_meet(cl_mem a, size_t a_lo, size_t a_hi, cl_mem b, size_t b_lo, size_t b_hi);

#endif
