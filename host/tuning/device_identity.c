/* device_identity.c -- the identity of a context's device as the tuning
 * database records it, and the two ways identities match. */
#include "tuning/device_identity.h"
#include "core/context.h"

#include <stdio.h>
#include <string.h>

void attn_device_identity_of(const attn_context *ctx, attn_device_identity *id)
{
    memset(id, 0, sizeof *id);
    snprintf(id->platform, sizeof id->platform, "%s", ctx->platform_name);
    snprintf(id->vendor, sizeof id->vendor, "%s", ctx->vendor);
    snprintf(id->name, sizeof id->name, "%s", ctx->device_name);
    snprintf(id->driver, sizeof id->driver, "%s", ctx->driver);
    id->compute_units = ctx->compute_units;
}

int attn_device_same(const attn_device_identity *a, const attn_device_identity *b)
{
    return strcmp(a->platform, b->platform) == 0 && strcmp(a->vendor, b->vendor) == 0 &&
           strcmp(a->name, b->name) == 0 && a->compute_units == b->compute_units;
}

int attn_device_compare(const attn_device_identity *a, const attn_device_identity *b)
{
    int c;
    if ((c = strcmp(a->platform, b->platform)) || (c = strcmp(a->vendor, b->vendor)) ||
        (c = strcmp(a->name, b->name)) || (c = strcmp(a->driver, b->driver)))
        return c;
    return (a->compute_units > b->compute_units) - (a->compute_units < b->compute_units);
}

int attn_device_exact(const attn_device_identity *a, const attn_device_identity *b)
{
    return attn_device_compare(a, b) == 0;
}

