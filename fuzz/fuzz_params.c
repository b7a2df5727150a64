/* fuzz_params.c -- any text as a parameter override ("family=vector,
 * rows=8,...", what ATTN_PARAMS and attn_context_set_params take) for
 * attn_params_parse, over any family's defaults. A failure is one of its
 * two kinds, changes nothing and says why within the error buffer's size;
 * a success leaves a real family, every changed field inside the range of
 * a tunable at that field (the family's own, where it has one), and parses
 * again to itself; over the defaults of the family it names, as the
 * planner parses it, it is accepted too, and its formatted form parses
 * back to the same tunables. */
#include "fuzz_util.h"
#include "kernels/kernel_desc.h"
#include "kernels/params.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(const attn_tunable_desc *t, int v)
{
    return v >= t->min && v <= t->max && !(t->pow2 && (v & (v - 1)));
}

/* Whether a changed field's value is one some tunable at its offset allows:
 * the family's own tunable when it has one there, else any family's or
 * "splits" (kv_splits, 0..256). */
static int value_allowed(const attn_family_desc *f, size_t offset, int v)
{
    for (int i = 0; i < f->ntunables; i++)
        if (f->tunables[i].offset == offset) return inside(&f->tunables[i], v);
    if (offset == offsetof(attn_params, kv_splits)) return v >= 0 && v <= 256;
    for (int d = 0; d < attn_family_desc_count; d++) {
        const attn_family_desc *g = attn_family_descs[d];
        for (int i = 0; i < g->ntunables; i++)
            if (g->tunables[i].offset == offset && inside(&g->tunables[i], v)) return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    const int start_family = data[0] % ATTN_FAMILY_COUNT;
    const size_t errsize = 1 + data[1] % 200; /* 1 leaves room for the NUL alone */
    data += 2, size -= 2;
    char *text = malloc(size + 1); /* an embedded NUL ends the text early, as in C */
    char *err = malloc(errsize);   /* exact size: ASan sees a write past it */
    if (!text || !err) abort();
    memcpy(text, data, size);
    text[size] = 0;
    memset(err, 'x', errsize);

    const attn_params start = attn_params_defaults(start_family);
    attn_params pr = start;
    const int rc = attn_params_parse(text, &pr, err, errsize);
    if (rc != 0) {
        if (rc != ATTN_PARAMS_SYNTAX && rc != ATTN_PARAMS_UNKNOWN)
            fuzz_fail("refused with %d, neither ATTN_PARAMS_SYNTAX nor ATTN_PARAMS_UNKNOWN", rc);
        if (memcmp(&pr, &start, sizeof pr) != 0) fuzz_fail("a refused override changed params");
        if (!memchr(err, 0, errsize)) fuzz_fail("the error is not terminated within its buffer");
        if (errsize > 1 && err[0] == 0) fuzz_fail("refused without a reason");
        free(text), free(err);
        return 0;
    }
    const attn_family_desc *f = attn_family_desc_of(pr.family);
    if (pr.family < 0 || pr.family >= ATTN_FAMILY_COUNT || !f)
        fuzz_fail("accepted family %d", pr.family);
    for (size_t off = 0; off < sizeof pr; off += sizeof(int)) {
        const int was = attn_desc_get(&start, off), now = attn_desc_get(&pr, off);
        if (off != offsetof(attn_params, family) && now != was && !value_allowed(f, off, now))
            fuzz_fail("field at offset %zu set to %d, which no tunable there allows", off, now);
    }
    attn_params again = pr;
    if (attn_params_parse(text, &again, err, errsize) != 0 || memcmp(&again, &pr, sizeof pr) != 0)
        fuzz_fail("the same override parsed again gave another result");
    /* naming another family keeps the old family's fields (rows=64 of mma
     * under family=vector), so the planner parses the text again over the
     * named family's own start (attn_plan_parse_over), which must not fail */
    if (pr.family != start.family) {
        pr = attn_params_defaults(pr.family);
        if (attn_params_parse(text, &pr, err, errsize) != 0)
            fuzz_fail("accepted over family %d, refused over family %d's defaults", start_family,
                      pr.family);
    }
    char formatted[512], err2[256];
    attn_params_format(&pr, formatted, sizeof formatted);
    attn_params back = attn_params_defaults(pr.family);
    if (attn_params_parse(formatted, &back, err2, sizeof err2) != 0)
        fuzz_fail("\"%s\" (formatted) does not parse: %s", formatted, err2);
    if (back.family != pr.family) fuzz_fail("\"%s\" parsed to another family", formatted);
    for (int i = 0; i < f->ntunables; i++)
        if (attn_desc_get(&back, f->tunables[i].offset) != attn_desc_get(&pr, f->tunables[i].offset))
            fuzz_fail("\"%s\" parsed back with another %s", formatted, f->tunables[i].name);
    free(text), free(err);
    return 0;
}
