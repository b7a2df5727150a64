/* kernel_desc.h -- a kernel family described in one place: its cl/ sources
 * and entry kernels (prefill and decode), its tunables (name, -D macro,
 * field, default, legal range, search values), the constraints between
 * them, and its local- and private-memory use. params.c builds the option string, the
 * legality check and the heuristic's shrink loop from these; search_space.c
 * the tuner's search. Adding a tunable = one row here + the #ifndef in .cl. */
#ifndef ATTN_KERNEL_DESC_H
#define ATTN_KERNEL_DESC_H

#include "kernels/params.h"

#include <stddef.h>

#define ATTN_DESC_MAX_SEARCH 10
#define ATTN_DESC_MAX_SOURCES 10
#define ATTN_DESC_MAX_SHRINK 6

/* One tunable of a family. */
typedef struct attn_tunable_desc {
    const char *name;  /* as written in ATTN_PARAMS and plan strings */
    const char *macro; /* the -D macro in cl/ */
    size_t offset;     /* offsetof(attn_params, field) */
    int min, max;      /* inclusive legal range */
    int pow2;          /* must be a power of two */
    int dflt;          /* the family's default (the heuristic's start) */
    int nsearch;       /* the tuner's values, ascending */
    int search[ATTN_DESC_MAX_SEARCH];
    const char *meaning;
} attn_tunable_desc;

/* a must be a multiple of b (CLBlast's MultipleOfX), both field offsets */
typedef struct attn_constraint {
    size_t a, b;
} attn_constraint;

/* What the heuristic gives up, in order, until the parameters are legal:
 * the field is halved while above floor. */
typedef struct attn_shrink_step {
    size_t offset;
    int floor;
} attn_shrink_step;

/* One entry point of a family: the program's sources (in order) and the
 * kernel, with how the heuristic shrinks it. */
typedef struct attn_entry_desc {
    const char *kernel;
    const char *sources[ATTN_DESC_MAX_SOURCES];
    int nsources;
    attn_shrink_step shrink[ATTN_DESC_MAX_SHRINK];
    int nshrink;
} attn_entry_desc;

typedef struct attn_family_desc {
    int family;       /* attn_family */
    const char *name; /* "tiled", "vector" */
    const attn_tunable_desc *tunables;
    int ntunables;
    const attn_constraint *constraints;
    int nconstraints;
    /* the field that is the work-group size (bounded by the device), or
     * (size_t)-1: one work-item per work-group */
    size_t wg_offset;
    /* bytes of __local memory the kernels declare for p (its head dim and
     * storage type), or NULL for none */
    size_t (*local_bytes)(const attn_params *pr, const attn_problem *p);
    /* bytes of private (register) state one work-item of entry point
     * `entry` (ATTN_ENTRY_*) holds: the per-work-item arrays its kernel
     * declares, each term naming its array; what a GPU's register file must
     * hold (ATTN_PRIVATE_BUDGET_GPU). p gives the head dim and the storage
     * type (decode's score scratch depends on it). */
    size_t (*private_bytes)(const attn_params *pr, const attn_problem *p, int entry);
    /* -D macros derived from the tunables for entry point `entry`, or NULL
     * for none; appended */
    void (*derived_options)(const attn_params *pr, const attn_problem *p, int entry, char *buf,
                            size_t n);
    attn_entry_desc entry[ATTN_ENTRY_COUNT]; /* an entry without a kernel: none */
    /* the work-group size when it is derived from several tunables, or
     * NULL: the field at wg_offset (or 1) */
    size_t (*work_group)(const attn_params *pr);
    /* query rows per work-group when derived from several tunables, or
     * NULL: the field block_rows */
    int (*block_rows)(const attn_params *pr);
    /* why the family cannot run p whatever its tunables (a storage type, a
     * head dim), or NULL for a family that runs every problem */
    const char *(*refuses)(const attn_problem *p);
    /* 1: the tuner searches the family only when asked for it by name
     * (attn-tune --family) or where it is the default plan (mma on a
     * device where mma_gate.c verified it), not among all families */
    int search_named_only;
} attn_family_desc;

extern const attn_family_desc attn_desc_tiled, attn_desc_vector, attn_desc_flash, attn_desc_mma;

/* The vector family's defaults for a CPU whose native float vector is
 * float_width wide (CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT; 0 unknown): the
 * static defaults are AVX-512's, narrower vectors get their own
 * (desc_vector.c says what was measured). Changes only the fields of entry
 * it applies to, in place. */
void attn_vector_fit_width(int entry, attn_params *pr, unsigned float_width);

/* The descriptor of family f, or NULL. */
const attn_family_desc *attn_family_desc_of(int family);
/* Every family, in attn_family order. */
extern const attn_family_desc *const attn_family_descs[];
extern const int attn_family_desc_count;

/* The tunables the tuner searches for entry point `entry` (ATTN_ENTRY_*)
 * of family `family`: the family's, then for decode the shared "splits"
 * (whose search values start with 0, automatic). Fills out (at most max);
 * returns the count. */
#define ATTN_SEARCH_MAX_AXES 16
int attn_search_axes(int family, int entry, const attn_tunable_desc **out, int max);

/* The value of tunable t in pr, and a pointer to it. */
int attn_desc_get(const attn_params *pr, size_t offset);
int *attn_desc_field(attn_params *pr, size_t offset);

#endif /* ATTN_KERNEL_DESC_H */
