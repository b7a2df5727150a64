/* no_clblast.c -- run by tools/check-install.sh against a libattn built with
 * -DATTN_WITH_CLBLAST=OFF: the library says it has no CLBlast, and each
 * CLBlast path refuses a valid call with ATTN_ERROR_UNSUPPORTED and a message
 * that begins with its name and says why, while a bad argument is still
 * ATTN_ERROR_INVALID_ARGUMENT (validation comes first). Exit status 0 when
 * all of that holds. */
#include <attn.h>

#include <stdio.h>
#include <string.h>

enum { HQ = 2, HKV = 1, S = 8, D = 16, DM = HQ * D };

static int failures;

static void expect(const char *fn, attn_context *ctx, attn_status got, attn_status want,
                   const char *word)
{
    const char *msg = attn_last_error(ctx);
    const size_t n = strlen(fn);
    if (got != want || strncmp(msg, fn, n) != 0 || msg[n] != ':' || !strstr(msg, word)) {
        printf("no_clblast: %s returned %s (\"%s\"); expected %s and a message with \"%s\"\n",
               fn, attn_status_name(got), msg, attn_status_name(want), word);
        failures++;
    }
}

int main(void)
{
    if (attn_has_clblast()) {
        printf("no_clblast: attn_has_clblast() is 1 in a build configured without CLBlast\n");
        return 1;
    }
    attn_context *ctx;
    attn_status st = attn_context_create(NULL, &ctx);
    if (st != ATTN_SUCCESS) {
        printf("no_clblast: %s: %s\n", attn_status_name(st), attn_last_create_error());
        return 1;
    }
    static float host[DM * DM * 2]; /* more than any weight matrix or tensor here */
    cl_int err;
    cl_mem m = clCreateBuffer(attn_context_cl_context(ctx), CL_MEM_READ_WRITE, sizeof host, NULL,
                              &err);
    if (err != CL_SUCCESS) return 1;
    /* q, k, v and out side by side in one buffer: they may not overlap */
    const size_t nq = (size_t)HQ * S * D, nkv = (size_t)HKV * S * D;
    const attn_tensor q = {m, 0, nq, (size_t)S * D, D}, k = {m, nq, nkv, (size_t)S * D, D};
    const attn_tensor v = {m, nq + nkv, nkv, (size_t)S * D, D};
    const attn_tensor o = {m, nq + 2 * nkv, nq, (size_t)S * D, D};
    const attn_problem p = {.batch = 1, .q_heads = HQ, .kv_heads = HKV, .head_dim = D, .q_len = S,
                            .kv_len = S, .dtype = ATTN_F32, .causal = 1, .scale = 0.0f};
    attn_problem bad = p;
    bad.head_dim = 0;

    expect("attn_forward_materialized", ctx,
           attn_forward_materialized(ctx, &p, &q, &k, &v, &o, NULL, NULL, NULL),
           ATTN_ERROR_UNSUPPORTED, "no CLBlast");
    expect("attn_forward_materialized", ctx,
           attn_forward_materialized(ctx, &bad, &q, &k, &v, &o, NULL, NULL, NULL),
           ATTN_ERROR_INVALID_ARGUMENT, "head_dim");
    float w[S * S];
    expect("attn_attention_weights", ctx, attn_attention_weights(ctx, &p, &q, &k, NULL, 0, 0, w),
           ATTN_ERROR_UNSUPPORTED, "no CLBlast");
    const attn_layer_config cfg = {DM, HQ, HKV, D, ATTN_F32, 1, 0.0f};
    attn_layer *layer = NULL;
    expect("attn_layer_create", ctx, attn_layer_create(ctx, &cfg, host, host, host, host, &layer),
           ATTN_ERROR_UNSUPPORTED, "no CLBlast");
    expect("attn_layer_create", ctx, attn_layer_create(ctx, &cfg, host, NULL, host, host, &layer),
           ATTN_ERROR_INVALID_ARGUMENT, "w_k");
    if (layer) failures++;

    clReleaseMemObject(m);
    attn_context_release(ctx);
    if (!failures)
        printf("no CLBlast: attn_forward_materialized, attn_attention_weights and "
               "attn_layer_create return ATTN_ERROR_UNSUPPORTED after validation\n");
    return failures != 0;
}
