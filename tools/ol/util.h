/* util: the small things every part of ol needs: memory that never returns
 * NULL, string lists, files written atomically, paths, messages. */
#ifndef OL_UTIL_H
#define OL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Exit codes of every command (issue 3): pass, fail, usage or broken harness. */
enum { OL_PASS = 0, OL_FAIL = 1, OL_USAGE = 2 };

/* ---- memory: out of memory is fatal (exit 2), so callers never check ---- */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- a growable text buffer ---- */
typedef struct {
    char *s;
    size_t len, cap;
} strbuf;
void sb_add(strbuf *b, const char *text);
void sb_addn(strbuf *b, const char *text, size_t n);
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *sb_take(strbuf *b); /* the string (never NULL); b is reset */
void sb_free(strbuf *b);

/* ---- a list of owned strings ---- */
typedef struct {
    char **v;
    int n, cap;
} strlist;
void sl_push(strlist *l, const char *s);       /* copies s */
void sl_push_owned(strlist *l, char *s);       /* takes s */
bool sl_contains(const strlist *l, const char *s);
void sl_sort(strlist *l);
char *sl_join(const strlist *l, const char *sep);
void sl_free(strlist *l);

/* ---- text from a student's files (names, lines, messages) ---- */
/* As a terminal may show it: control characters but tab and newline (C0, DEL, C1) spelled
 * \x1b or \u009b, each byte of invalid UTF-8 \xff, so none sets a title or clears the
 * screen of whoever reads ol's output (a grader too). Caller frees. */
char *shown_text(const char *s);
/* JSON is UTF-8 (RFC 8259); a student's bytes need not be. */
bool utf8_valid(const char *s);
/* s with each ill-formed sequence (its maximal subpart, as Python's errors="replace" does)
 * as U+FFFD. Caller frees. */
char *utf8_repaired(const char *s);

/* ---- messages: "ol: error: ..." on stderr ---- */
void ol_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ol_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Colour only on a terminal, and never when NO_COLOR is set. */
bool use_color(FILE *f);
const char *color(FILE *f, const char *ansi); /* ansi or "" */
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_RESET "\033[0m"

/* ---- files and paths ---- */
char *path_join(const char *a, const char *b);
char *path_dirname(const char *path);
const char *path_base(const char *path);
/* path relative to base when it lies under base, else path itself. */
const char *path_rel(const char *path, const char *base);
bool is_file(const char *path);
bool is_dir(const char *path);
/* Contents with a terminating NUL; NULL with errno set on failure. */
char *read_file(const char *path, size_t *len);
/* Writes via a temporary name and rename(2): never a partial file. */
int write_file_atomic(const char *path, const void *data, size_t len);
int copy_file_atomic(const char *src, const char *dst);
/* Creates path with data only if it does not exist (never overwrites, even
 * in a race): -1 with errno EEXIST when it does. */
int write_file_new(const char *path, const void *data, size_t len);
int mkdir_p(const char *path);
/* Removes a tree; refuses any path outside `inside` (a guard against bugs). */
int remove_tree(const char *path, const char *inside);
/* Files directly in dir whose names end with suffix, sorted, as full paths. */
int list_files(const char *dir, const char *suffix, strlist *out);
/* A fresh directory under parent (created if needed); caller frees. */
char *make_temp_dir(const char *parent, const char *prefix);
/* The source line `line` (1-based) of a file, trimmed; NULL if absent. */
char *source_line(const char *path, int line);

double now_seconds(void);

/* ---- "did you mean" ---- */
/* The candidate nearest to word (case ignored) when it is near enough to be
 * a slip: an edit distance of at most 1 for short words, 2 from 5
 * characters, or one is a prefix of the other. NULL when none is. */
const char *closest_word(const char *word, const char *const *candidates, int n);

#endif
