/* shape_class.h -- the shape classes the tuning database is keyed on:
 * which problems one tuned entry serves, and how far apart two classes are.
 * Shared by the database (tuning_db.c), the library's lookup
 * (tuning_lookup.c) and the tuner; depends on attn.h and the variant bits of
 * attention/variants.h. */
#ifndef ATTN_SHAPE_CLASS_H
#define ATTN_SHAPE_CLASS_H

#include "attn.h"

#include <stddef.h>

/* A tuning database entry serves every problem of its class: head dim,
 * storage type, causal, variants and a decode's cache kind exactly; the GQA
 * group and the query and key lengths' power-of-two buckets by nearness
 * (attn_shape_class_distance: half-octaves summed), so the nearest entry
 * serves an unseen group or length. */
typedef struct attn_shape_class {
    int head_dim;
    attn_dtype dtype;
    int causal;    /* 0 or 1; 1 for q_len 1, where it changes nothing */
    int group;     /* q_heads / kv_heads */
    int q_bucket;  /* q_len rounded to the nearest power of two (in log scale) */
    int kv_bucket; /* kv_len likewise */
    int decode;    /* 1: attn_decode's class (kv_len = the cache's capacity); 0: attn_forward's */
    int kv_int8;   /* decode over an int8 cache (ATTN_KV_INT8): its own kernels */
    /* decode over a paged cache: its block size exactly (0: contiguous).
     * Exact, not bucketed: there are only five (16..256), the keys per
     * block must not exceed it (an entry of block 64 with keys=64 is no
     * entry for block 32), and decode's speed differs between them. */
    int kv_block;
    unsigned variants; /* attn_variant_flags: the variants that change the kernel; 0 none */
} attn_shape_class;

/* The power of two nearest to n in log scale (1 for n <= 1). */
int attn_length_bucket(int n);
void attn_shape_class_of(const attn_problem *p, attn_shape_class *c);
/* The class of attn_decode of p (kv_len: the cache's capacity) over a cache
 * of blocks of page_rows tokens (0: contiguous), int8 or not. */
void attn_decode_class_of(const attn_problem *p, int page_rows, int kv_int8,
                          attn_shape_class *c);
/* "D64 f32 causal g4 q2048 kv2048" (" decode" after a decode class, " int8"
 * after one over an int8 cache, " block16" after one over a paged cache of
 * blocks of 16, then " +window,softcap" for the variants) */
void attn_shape_class_format(const attn_shape_class *c, char *buf, size_t size);
int attn_shape_class_equal(const attn_shape_class *a, const attn_shape_class *b);
/* An order on classes (strcmp's sign), 0 exactly when equal: every field. */
int attn_shape_class_compare(const attn_shape_class *a, const attn_shape_class *b);
/* How far apart two classes of the same head dim, type, causality,
 * variants and (decode) cache kind are: octaves of group, q and kv bucket summed; -1 when they
 * cannot substitute. */
int attn_shape_class_distance(const attn_shape_class *a, const attn_shape_class *b);
/* The variant bits of "window,softcap" (attn_variant_names' text; "" is
 * none): 0, or -1 with the unknown name in err. */
int attn_variant_flags_parse(const char *names, unsigned *flags, char *err, size_t errsize);

/* attn_problem_flops (the work a class's GFLOP/s are counted by) is public:
 * attn.h. */

#endif /* ATTN_SHAPE_CLASS_H */
