/* text.h -- small string matching and number parsing (text.c) shared by
 * the library and the tools: choosing a device by part of its name
 * (context.c), naming devices to forget (attn-tune), and reading whole
 * and decimal numbers from options, environment variables and the
 * override syntax. */
#ifndef ATTN_CORE_TEXT_H
#define ATTN_CORE_TEXT_H

/* 1 when needle occurs in hay ignoring ASCII case (an empty needle occurs
 * in every string), else 0. */
int attn_contains_ci(const char *hay, const char *needle);
/* 1 when a and b are equal ignoring ASCII case, else 0. */
int attn_equal_ci(const char *a, const char *b);

/* A whole number written plainly: an optional '-' and decimal digits, the
 * whole string, nothing else (no spaces, no '+', no "0x"), in lo..hi.
 * Returns 0 with the value in *out, else -1 and *out untouched. strtol
 * alone skips leading spaces, takes a '+', and a caller casting its long
 * to int wraps "4294967297" to 1. */
int attn_parse_long(const char *text, long lo, long hi, long *out);
/* The same for an int (lo..hi within int's range). */
int attn_parse_int(const char *text, int lo, int hi, int *out);
/* A decimal number written plainly: an optional '-', then a digit or a
 * point and a digit, the whole string as strtod reads it ("0.5", "1e3";
 * not " 1", "+1", "0x10", "inf", "nan", nor one that overflows or
 * underflows), in lo..hi. Returns 0 with the value in *out, else -1. */
int attn_parse_double(const char *text, double lo, double hi, double *out);
/* The same read as a float, the range checked on the float, as strtof's
 * result was ("0.001" is 1e-3f); one that underflows to 0.0f ("1e-50")
 * or overflows is refused, as strtof's ERANGE was. */
int attn_parse_float(const char *text, float lo, float hi, float *out);

#endif /* ATTN_CORE_TEXT_H */
