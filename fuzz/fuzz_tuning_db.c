/* fuzz_tuning_db.c -- the tuning database parser (attn_tuning_db_parse) on
 * arbitrary bytes, passed without a terminating NUL so that a read past
 * `len` is an ASan report.
 *
 * A success must print (attn_tuning_db_print) and the printed text must
 * parse again to a database that prints the same text, with as many
 * entries (unless an entry held more than this build keeps: then saving
 * it must be refused). A failure must be ATTN_ERROR_TUNING_DB with a message that
 * starts with the file name given and a line number ("NAME:LINE"), and
 * leave the database empty. Nothing may leak. */
#include "fuzz_util.h"
#include "tuning/tuning.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "fuzzed/tuning.json"

static unsigned long n_ok, n_bad, n_entries;

static void print_counts(void)
{
    fprintf(stderr, "fuzz_tuning_db: %lu rejected, %lu parsed (%lu entries in all)\n\n", n_bad,
            n_ok, n_entries);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    atexit(print_counts);
    return 0;
}

/* "NAME:LINE" followed by ':' and more */
static void check_message(const char *err)
{
    const size_t n = strlen(NAME);
    if (strncmp(err, NAME ":", n + 1) != 0)
        fuzz_fail("the message does not start with \"%s:\": \"%s\"", NAME, err);
    const char *p = err + n + 1;
    if (!isdigit((unsigned char)*p) || *p == '0')
        fuzz_fail("the message names no line: \"%s\"", err);
    while (isdigit((unsigned char)*p)) p++;
    if (*p != ':' || !p[1]) fuzz_fail("the message says nothing after its line: \"%s\"", err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact copy: no NUL after it */
    char *text = malloc(size ? size : 1);
    if (!text) fuzz_fail("out of memory");
    if (size) memcpy(text, data, size);

    char err[1024];
    attn_tuning_db db;
    attn_tuning_db_init(&db);
    memset(err, 0, sizeof err);
    attn_status st = attn_tuning_db_parse(text, size, NAME, &db, err, sizeof err);
    free(text);
    if (st != ATTN_SUCCESS) {
        if (st != ATTN_ERROR_TUNING_DB)
            fuzz_fail("parse: %s: \"%s\"", attn_status_name(st), err);
        check_message(err);
        if (db.count || db.entries) fuzz_fail("a rejected parse left %zu entries", db.count);
        n_bad++;
        return 0;
    }
    n_ok++;
    n_entries += db.count;
    /* an entry (or the top level) holding more of a newer attn than this
     * one can keep: read, but never written (the save refuses before
     * touching the file) */
    for (size_t i = 0; i <= db.count; i++)
        if (i == db.count ? db.extra_lost : db.entries[i].lost) {
            st = attn_tuning_db_save("never-written/tuning.json", &db, err, sizeof err);
            if (st != ATTN_ERROR_TUNING_DB || !strstr(err, "not written"))
                fuzz_fail("a database with a lost entry was not refused: %s: \"%s\"",
                          attn_status_name(st), err);
            attn_tuning_db_free(&db);
            return 0;
        }

    char *first = attn_tuning_db_print(&db);
    if (!first) fuzz_fail("print of %zu entries returned NULL", db.count);
    attn_tuning_db back;
    attn_tuning_db_init(&back);
    st = attn_tuning_db_parse(first, strlen(first), NAME, &back, err, sizeof err);
    if (st != ATTN_SUCCESS)
        fuzz_fail("the printed database does not parse: %s: \"%s\"\n%s", attn_status_name(st),
                  err, first);
    if (back.count != db.count)
        fuzz_fail("%zu entries printed, %zu parsed back", db.count, back.count);
    char *second = attn_tuning_db_print(&back);
    if (!second) fuzz_fail("print of the parsed-back database returned NULL");
    if (strcmp(first, second) != 0)
        fuzz_fail("print -> parse -> print differs:\n--- first\n%s\n--- second\n%s", first, second);
    free(first);
    free(second);
    attn_tuning_db_free(&back);
    attn_tuning_db_free(&db);
    return 0;
}
