#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- memory ---- */

static void out_of_memory(void) {
    fputs("ol: error: out of memory\n", stderr);
    exit(OL_USAGE);
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory();
    return p;
}

void *xcalloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) out_of_memory();
    return p;
}

void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory();
    return q;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n) {
    char *d = xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static char *xvasprintf(const char *fmt, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0) out_of_memory();
    char *s = xmalloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *xasprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

/* ---- strbuf ---- */

void sb_addn(strbuf *b, const char *text, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        b->s = xrealloc(b->s, cap);
        b->cap = cap;
    }
    memcpy(b->s + b->len, text, n);
    b->len += n;
    b->s[b->len] = 0;
}

void sb_add(strbuf *b, const char *text) { sb_addn(b, text, strlen(text)); }

void sb_printf(strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    sb_add(b, s);
    free(s);
}

char *sb_take(strbuf *b) {
    char *s = b->s ? b->s : xstrdup("");
    b->s = NULL;
    b->len = b->cap = 0;
    return s;
}

void sb_free(strbuf *b) {
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

/* ---- strlist ---- */

void sl_push_owned(strlist *l, char *s) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n++] = s;
}

void sl_push(strlist *l, const char *s) { sl_push_owned(l, xstrdup(s)); }

bool sl_contains(const strlist *l, const char *s) {
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0) return true;
    return false;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void sl_sort(strlist *l) {
    if (l->n > 1) qsort(l->v, (size_t)l->n, sizeof *l->v, cmp_str);
}

char *sl_join(const strlist *l, const char *sep) {
    strbuf b = {0};
    for (int i = 0; i < l->n; i++) {
        if (i) sb_add(&b, sep);
        sb_add(&b, l->v[i]);
    }
    return sb_take(&b);
}

void sl_free(strlist *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* ---- text from a student's files ---- */

/* The length of the well-formed UTF-8 sequence at s (an ASCII byte is one), or minus the
 * length of its maximal ill-formed subpart (at least one byte): Unicode's bounds, so
 * overlong forms, surrogates and code points past U+10FFFF are ill-formed. */
static int utf8_at(const unsigned char *s) {
    if (s[0] < 0x80) return 1;
    int n = s[0] >= 0xf0 ? (s[0] <= 0xf4 ? 4 : 0) : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (!n) return -1;
    /* the second byte's range depends on the first; the rest are 80..BF */
    unsigned lo = s[0] == 0xe0 ? 0xa0 : s[0] == 0xf0 ? 0x90 : 0x80;
    unsigned hi = s[0] == 0xed ? 0x9f : s[0] == 0xf4 ? 0x8f : 0xbf;
    for (int i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
        if (s[i] < lo || s[i] > hi) return -i; /* the NUL at the end stops it too */
    return n;
}

char *shown_text(const char *s) {
    strbuf b = {0};
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_at(p);
        if (n < 0) {
            for (int i = 0; i < -n; i++) sb_printf(&b, "\\x%02x", p[i]);
            n = -n;
        } else if (n == 1 && ((*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f))
            sb_printf(&b, "\\x%02x", *p);
        else if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) sb_printf(&b, "\\u%04x", p[1]);
        else sb_addn(&b, (const char *)p, (size_t)n);
        p += n;
    }
    return sb_take(&b);
}

bool utf8_valid(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_at(p);
        if (n < 0) return false;
        p += n;
    }
    return true;
}

char *utf8_repaired(const char *s) {
    strbuf b = {0};
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_at(p);
        if (n < 0) sb_add(&b, "\xef\xbf\xbd");
        else sb_addn(&b, (const char *)p, (size_t)n);
        p += n < 0 ? -n : n;
    }
    return sb_take(&b);
}

/* ---- messages ---- */

bool use_color(FILE *f) {
    const char *no = getenv("NO_COLOR");
    if (no && *no) return false;
    const char *term = getenv("TERM");
    if (term && strcmp(term, "dumb") == 0) return false;
    return isatty(fileno(f));
}

const char *color(FILE *f, const char *ansi) { return use_color(f) ? ansi : ""; }

static void vmessage(const char *kind, const char *ansi, const char *fmt, va_list ap) {
    fflush(stdout);
    fprintf(stderr, "ol: %s%s:%s ", color(stderr, ansi), kind, color(stderr, C_RESET));
    /* a message may quote a student's name or line (ol's own colours are outside it) */
    char *msg = xvasprintf(fmt, ap), *shown = shown_text(msg);
    fputs(shown, stderr);
    fputc('\n', stderr);
    free(shown);
    free(msg);
}

void ol_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage("error", C_RED, fmt, ap);
    va_end(ap);
}

void ol_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage("warning", C_YELLOW, fmt, ap);
    va_end(ap);
}

/* ---- paths ---- */

char *path_join(const char *a, const char *b) {
    if (!a || !*a) return xstrdup(b);
    size_t la = strlen(a);
    return xasprintf("%s%s%s", a, a[la - 1] == '/' ? "" : "/", b);
}

char *path_dirname(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return xstrdup(".");
    if (slash == path) return xstrdup("/");
    return xstrndup(path, (size_t)(slash - path));
}

const char *path_base(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

const char *path_rel(const char *path, const char *base) {
    size_t n = strlen(base);
    if (n && strncmp(path, base, n) == 0 && path[n] == '/') return path + n + 1;
    return path;
}

bool is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    strbuf b = {0};
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) sb_addn(&b, chunk, got);
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        sb_free(&b);
        errno = EIO;
        return NULL;
    }
    if (len) *len = b.len;
    return sb_take(&b);
}

int write_file_atomic(const char *path, const void *data, size_t len) {
    char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(tmp);
        return -1;
    }
    int ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int saved = errno;
        unlink(tmp);
        free(tmp);
        errno = saved;
        return -1;
    }
    free(tmp);
    return 0;
}

int copy_file_atomic(const char *src, const char *dst) {
    size_t len;
    char *data = read_file(src, &len);
    if (!data) return -1;
    int rc = write_file_atomic(dst, data, len);
    free(data);
    struct stat st;
    if (rc == 0 && stat(src, &st) == 0) chmod(dst, st.st_mode & 0777);
    return rc;
}

int write_file_new(const char *path, const void *data, size_t len) {
    char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(tmp);
        return -1;
    }
    int ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    /* link(2) fails when path exists: unlike rename, it cannot overwrite */
    int rc = ok ? link(tmp, path) : -1;
    int saved = errno;
    unlink(tmp);
    free(tmp);
    errno = saved;
    return rc;
}

int mkdir_p(const char *path) {
    char *p = xstrdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = (mkdir(p, 0777) != 0 && errno != EEXIST) ? -1 : 0;
    free(p);
    return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int remove_tree(const char *path, const char *inside) {
    size_t n = strlen(inside);
    if (n < 2 || strncmp(path, inside, n) != 0 || path[n] != '/' || strstr(path, "/../")) {
        errno = EPERM;
        return -1;
    }
    if (access(path, F_OK) != 0) return 0;
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int list_files(const char *dir, const char *suffix, strlist *out) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    size_t ls = strlen(suffix);
    strlist found = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t ln = strlen(e->d_name);
        if (e->d_name[0] == '.' || ln < ls || strcmp(e->d_name + ln - ls, suffix) != 0) continue;
        char *full = path_join(dir, e->d_name);
        if (is_file(full)) sl_push_owned(&found, full);
        else free(full);
    }
    closedir(d);
    sl_sort(&found);
    for (int i = 0; i < found.n; i++) sl_push_owned(out, found.v[i]);
    free(found.v);
    return 0;
}

char *make_temp_dir(const char *parent, const char *prefix) {
    if (mkdir_p(parent) != 0) return NULL;
    char *tmpl = xasprintf("%s/%s.XXXXXX", parent, prefix);
    if (!mkdtemp(tmpl)) {
        free(tmpl);
        return NULL;
    }
    return tmpl;
}

char *source_line(const char *path, int line) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char buf[1024];
    char *found = NULL;
    for (int n = 1; fgets(buf, sizeof buf, f); n++) {
        if (n != line) {
            /* skip the rest of a long line */
            while (!strchr(buf, '\n') && fgets(buf, sizeof buf, f)) {}
            continue;
        }
        char *s = buf;
        while (*s == ' ' || *s == '\t') s++;
        size_t l = strlen(s);
        while (l && (s[l - 1] == '\n' || s[l - 1] == '\r' || s[l - 1] == ' ')) s[--l] = 0;
        found = xstrdup(s);
        break;
    }
    fclose(f);
    return found;
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- "did you mean" ---- */

static bool same_letter(char a, char b) {
    return tolower((unsigned char)a) == tolower((unsigned char)b);
}

/* Damerau-Levenshtein distance (a swap of neighbours counts one), case ignored. */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b), w = lb + 1;
    int *d =
        xcalloc((la + 1) * w, sizeof *d); /* d[i * w + j]: a's first i letters to b's first j */
    for (size_t i = 0; i <= la; i++) d[i * w] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int best = d[(i - 1) * w + j] + 1;
            if (d[i * w + j - 1] + 1 < best) best = d[i * w + j - 1] + 1;
            int change = d[(i - 1) * w + j - 1] + !same_letter(a[i - 1], b[j - 1]);
            if (change < best) best = change;
            bool swapped = i > 1 && j > 1 && same_letter(a[i - 1], b[j - 2]) &&
                           same_letter(a[i - 2], b[j - 1]);
            if (swapped && d[(i - 2) * w + j - 2] + 1 < best) best = d[(i - 2) * w + j - 2] + 1;
            d[i * w + j] = best;
        }
    int r = d[la * w + lb];
    free(d);
    return r;
}

const char *closest_word(const char *word, const char *const *candidates, int n) {
    const char *best = NULL;
    int best_d = 1 << 30;
    size_t lw = strlen(word);
    for (int i = 0; i < n; i++) {
        const char *c = candidates[i];
        size_t lc = strlen(c);
        int d = edit_distance(word, c);
        int limit = (lw < lc ? lw : lc) >= 5 ? 2 : 1;
        bool prefix = lw >= 2 && lc >= 2 && (strncasecmp(word, c, lw < lc ? lw : lc) == 0);
        if ((d <= limit || prefix) && d < best_d) {
            best = c;
            best_d = d;
        }
    }
    return best;
}
