/* device_identity.h -- which device a tuning database entry was measured
 * on, and when two identities are the same device (or the same device and
 * driver). Shared by the database, the lookup and the tuner. */
#ifndef ATTN_DEVICE_IDENTITY_H
#define ATTN_DEVICE_IDENTITY_H

#include "attn.h"

typedef struct attn_device_identity {
    char platform[256], vendor[256], name[256], driver[256];
    unsigned compute_units;
} attn_device_identity;

void attn_device_identity_of(const attn_context *ctx, attn_device_identity *id);
/* Same platform, vendor, name and compute units (the driver may differ). */
int attn_device_same(const attn_device_identity *a, const attn_device_identity *b);
/* attn_device_same and the same driver too. */
int attn_device_exact(const attn_device_identity *a, const attn_device_identity *b);
/* An order on identities (strcmp's sign), 0 exactly when attn_device_exact. */
int attn_device_compare(const attn_device_identity *a, const attn_device_identity *b);

#endif /* ATTN_DEVICE_IDENTITY_H */
