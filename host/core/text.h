/* text.h -- small string matching (text.c) shared by the library and the
 * tools that link its internals: choosing a device by part of its name
 * (context.c) and naming devices to forget (attn-tune). */
#ifndef ATTN_CORE_TEXT_H
#define ATTN_CORE_TEXT_H

/* 1 when needle occurs in hay ignoring ASCII case (an empty needle occurs
 * in every string), else 0. */
int attn_contains_ci(const char *hay, const char *needle);
/* 1 when a and b are equal ignoring ASCII case, else 0. */
int attn_equal_ci(const char *a, const char *b);

#endif /* ATTN_CORE_TEXT_H */
