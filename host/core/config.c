/* config.c -- a context's configuration: the environment's defaults read
 * once at creation (ATTN_PARAMS, ATTN_CHECK, ATTN_TUNING_DB,
 * ATTN_SYSTEM_TUNING_DB, ATTN_KERNEL_DIR, ATTN_CACHE_DIR, ATTN_CACHE_MAX_MB,
 * ATTN_SOFTMAX_WG),
 * and the calls that replace them. Changing any but the cache folder clears
 * the context's cached plans. No call path reads the environment: a
 * variable set after creation affects only the contexts created after it. */
#define _POSIX_C_SOURCE 200809L
#include "core/config.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/log.h"
#include "attention/mma_gate.h"
#include "attention/plan.h"
#include "tuning/tuning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A malloc'd copy of text, or NULL for NULL or "". *failed on out of memory. */
static char *copy_or_null(const char *text, int *failed)
{
    if (!text || !*text) return NULL;
    char *c = strdup(text);
    if (!c) *failed = 1;
    return c;
}

int attn_path_fits(int made, size_t size, const char *from)
{
    if (made >= 0 && (size_t)made < size) return 1;
    attn_log(ATTN_LOG_WARN, "the path from %s is longer than %zu bytes; not used", from,
             size - 1);
    return 0;
}

int attn_env_path(char *buf, size_t size, const char *var, const char *xdg,
                  const char *under_xdg, const char *under_home)
{
    const char *env = getenv(var);
    if (env && *env) return attn_path_fits(snprintf(buf, size, "%s", env), size, var);
    env = getenv(xdg); /* the XDG base directory rule: a relative one is ignored */
    if (env && *env == '/')
        return attn_path_fits(snprintf(buf, size, "%s/%s", env, under_xdg), size, xdg);
    env = getenv("HOME");
    if (env && *env)
        return attn_path_fits(snprintf(buf, size, "%s/%s", env, under_home), size, "HOME");
    return 0;
}

int attn_disk_cache_dir(char *buf, size_t size)
{
    const char *env = getenv("ATTN_CACHE_DIR");
    if (env && !*env) return 0; /* set but empty: no disk cache, as the call's "" */
    return attn_env_path(buf, size, "ATTN_CACHE_DIR", "XDG_CACHE_HOME", "attn", ".cache/attn");
}

uint64_t attn_cache_max_bytes(const char *text)
{
    const uint64_t fallback = (uint64_t)ATTN_CACHE_MAX_MB_DEFAULT << 20;
    if (!text || !*text) return fallback;
    uint64_t mb = 0;
    const char *c = text;
    for (; *c >= '0' && *c <= '9'; c++) {
        if (mb > (UINT64_MAX >> 20) / 10) break; /* its bytes would not fit 64 bits */
        mb = mb * 10 + (uint64_t)(*c - '0');
    }
    if (*c || (mb << 20 >> 20) != mb) {
        attn_log(ATTN_LOG_WARN, "ATTN_CACHE_MAX_MB=\"%s\" is not a whole number of MiB that "
                 "fits 64 bits of bytes; the program cache is kept within %d MiB", text,
                 ATTN_CACHE_MAX_MB_DEFAULT);
        return fallback;
    }
    return mb << 20;
}

/* ATTN_CHECK: unset, "", 0, off, false or no is off; 1, on, true or yes is
 * on; anything else is said (a warning) and taken as on, the safe side. */
static int check_from_env(const char *v)
{
    static const char *off[] = {"", "0", "off", "false", "no"}, *on[] = {"1", "on", "true", "yes"};
    if (!v) return 0;
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++)
        if (strcasecmp(v, off[i]) == 0) return 0;
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
        if (strcasecmp(v, on[i]) == 0) return 1;
    attn_log(ATTN_LOG_WARN, "ATTN_CHECK=\"%s\" is not 0/1, on/off, true/false or yes/no; check "
             "mode is on", v);
    return 1;
}

int attn_config_init(attn_context *ctx)
{
    int failed = 0;
    ctx->check = check_from_env(getenv("ATTN_CHECK"));
    ctx->override = copy_or_null(getenv("ATTN_PARAMS"), &failed);
    ctx->override_from = "ATTN_PARAMS";
    char path[4096];
    if (attn_tuning_db_user_path(path, sizeof path))
        ctx->tuning_user_path = copy_or_null(path, &failed);
    if (attn_tuning_db_system_path(path, sizeof path))
        ctx->tuning_system_path = copy_or_null(path, &failed);
    if (attn_disk_cache_dir(path, sizeof path)) ctx->cache_dir = copy_or_null(path, &failed);
    ctx->cache_max_bytes = attn_cache_max_bytes(getenv("ATTN_CACHE_MAX_MB"));
    ctx->kernel_dir = copy_or_null(getenv("ATTN_KERNEL_DIR"), &failed);
    ctx->softmax_wg = copy_or_null(getenv("ATTN_SOFTMAX_WG"), &failed);
    return failed ? -1 : 0;
}

void attn_config_release(attn_context *ctx)
{
    free(ctx->override);
    free(ctx->tuning_user_path);
    free(ctx->tuning_system_path);
    free(ctx->kernel_dir);
    free(ctx->cache_dir);
    free(ctx->softmax_wg);
    free(ctx->plans);
    ctx->override = ctx->tuning_user_path = ctx->tuning_system_path = NULL;
    ctx->kernel_dir = ctx->cache_dir = ctx->softmax_wg = NULL;
    ctx->plans = NULL;
}

attn_status attn_context_set_params(attn_context *ctx, const char *params)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    attn_status st = ATTN_SUCCESS;
    /* the family is not known until a call: names and values are checked
     * against the family the text names, else against any family */
    attn_params probe = attn_params_defaults(-1);
    char err[256];
    int failed = 0;
    char *copy = NULL;
    if (params && *params && attn_params_parse(params, &probe, err, sizeof err) != 0)
        st = ATTN_FAIL(ctx, ATTN_ERROR_INVALID_ARGUMENT, "params \"%s\": %s", params, err);
    else if ((copy = copy_or_null(params, &failed)), failed)
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (st == ATTN_SUCCESS) {
        free(ctx->override);
        ctx->override = copy;
        ctx->override_from = "attn_context_set_params";
        attn_plan_clear(ctx);
    }
    attn_call_end(ctx);
    return st;
}

attn_status attn_context_set_tuning_db(attn_context *ctx, const char *user_path,
                                       const char *system_path)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    attn_call_begin(ctx, __func__);
    /* NULL: the default location, "" no database */
    char def[4096];
    int failed = 0;
    char *u = NULL, *s = NULL;
    if (user_path) u = copy_or_null(user_path, &failed);
    else if (attn_tuning_db_user_path(def, sizeof def)) u = copy_or_null(def, &failed);
    if (system_path) s = copy_or_null(system_path, &failed);
    else if (attn_tuning_db_system_path(def, sizeof def)) s = copy_or_null(def, &failed);
    attn_status st = ATTN_SUCCESS;
    if (failed) {
        free(u);
        free(s);
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory");
    } else {
        free(ctx->tuning_user_path);
        free(ctx->tuning_system_path);
        ctx->tuning_user_path = u;
        ctx->tuning_system_path = s;
        attn_tuning_reload(ctx); /* read on the next plan; clears the plans */
    }
    attn_call_end(ctx);
    return st;
}

/* Replaces the folder *slot (of the public call fn) by a copy of dir; NULL
 * or "" is none. reload: what was decided with the old sources goes: the
 * tuning lookup hashes them, so it reads again (which also clears the
 * plans); the mma verdicts were checks of their kernels. (Mask summaries
 * are kept only while no folder is set: mask_cache.h.) */
static attn_status set_dir(attn_context *ctx, const char *fn, char **slot, const char *dir,
                           int reload)
{
    attn_call_begin(ctx, fn);
    int failed = 0;
    char *copy = copy_or_null(dir, &failed);
    attn_status st = ATTN_SUCCESS;
    if (failed) {
        st = ATTN_FAIL(ctx, ATTN_ERROR_OUT_OF_MEMORY, "out of host memory copying dir");
    } else {
        free(*slot);
        *slot = copy;
        if (reload) {
            attn_tuning_reload(ctx);
            attn_mma_forget(ctx);
        }
    }
    attn_call_end(ctx);
    return st;
}

attn_status attn_context_set_cache_dir(attn_context *ctx, const char *dir)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    return set_dir(ctx, __func__, &ctx->cache_dir, dir, 0);
}

attn_status attn_context_set_kernel_dir(attn_context *ctx, const char *dir)
{
    if (!ctx) return attn_fail_null(__func__, "ctx");
    return set_dir(ctx, __func__, &ctx->kernel_dir, dir, 1);
}
