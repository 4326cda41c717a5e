/* jinja_lex.c: a template into tokens, with Jinja2's whitespace rules in the
 * environment transformers renders chat templates in (trim_blocks and
 * lstrip_blocks on, keep_trailing_newline off):
 *  - the source's line ends (\r\n, \r) become \n and one final \n is dropped;
 *  - "{%-", "{{-", "{#-" strip all whitespace before the tag, "-%}", "-}}",
 *    "-#}" all whitespace after it;
 *  - lstrip_blocks: spaces and tabs between a line's start and "{%" or "{#"
 *    are removed (not before "{{", not with "{%+");
 *  - trim_blocks: one newline right after "%}" or "#}" is removed (not after
 *    "}}", not with "+%}").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_internal.h"
#include "tinyllm/tensor.h"

static bool push(jarena *a, jtokens *t, jtok tok) {
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        jtok *items = ja_alloc(a, cap * sizeof *items);
        if (!items) return false;
        if (t->count) memcpy(items, t->items, t->count * sizeof *items);
        t->items = items;
        t->cap = cap;
    }
    t->items[t->count++] = tok;
    return true;
}

/* Python's str.isspace for the ASCII range, and the common Unicode spaces. */
static size_t space_at(const char *s, size_t i, size_t len) {
    unsigned char c = (unsigned char)s[i];
    if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return 1;
    if (c == 0xC2 && i + 1 < len && ((unsigned char)s[i + 1] == 0x85 ||
                                     (unsigned char)s[i + 1] == 0xA0))
        return 2;
    if (c == 0xE3 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
        (unsigned char)s[i + 2] == 0x80)
        return 3;
    if (c == 0xE2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80) {
        unsigned char d = (unsigned char)s[i + 2];
        if (d <= 0x8A || d == 0xA8 || d == 0xA9 || d == 0xAF) return 3;
    }
    if (c == 0xE2 && i + 2 < len && (unsigned char)s[i + 1] == 0x81 &&
        (unsigned char)s[i + 2] == 0x9F)
        return 3;
    return 0;
}

/* The length of text without its trailing whitespace (str.rstrip()). */
static size_t rstrip_len(const char *s, size_t len) {
    size_t end = 0, i = 0;
    while (i < len) {
        size_t w = space_at(s, i, len);
        if (w) {
            i += w;
        } else {
            i++;
            while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
            end = i;
        }
    }
    return end;
}

static int count_lines(const char *s, size_t n) {
    int lines = 0;
    for (size_t i = 0; i < n; i++) lines += s[i] == '\n';
    return lines;
}

static bool fail(int line, const char *fmt, const char *what) {
    tl_fail("tl_jinja_render: line %d: %s%s", line, fmt, what ? what : "");
    return false;
}

/* A string literal at s[i] (quote q); the unescaped text into *out. */
static bool lex_string(jarena *a, const char *s, size_t len, size_t *i, int line, jtok *out) {
    char q = s[*i];
    jstr text = {.arena = a};
    size_t k = *i + 1;
    for (; k < len && s[k] != q; k++) {
        if (s[k] != '\\' || k + 1 >= len) {
            js_append(&text, s + k, 1);
            continue;
        }
        char e = s[++k];
        const char *rep = NULL;
        switch (e) {
        case 'n': rep = "\n"; break;
        case 't': rep = "\t"; break;
        case 'r': rep = "\r"; break;
        case '\\': rep = "\\"; break;
        case '\'': rep = "'"; break;
        case '"': rep = "\""; break;
        case '0': rep = ""; js_append(&text, "\0", 1); break;
        case 'u':
        case 'x': {
            int digits = e == 'u' ? 4 : 2;
            if (k + (size_t)digits >= len) return fail(line, "a bad escape in a string", NULL);
            char hex[5] = {0};
            memcpy(hex, s + k + 1, (size_t)digits);
            unsigned long cp = strtoul(hex, NULL, 16);
            char u[4];
            int n;
            if (cp < 0x80) {
                u[0] = (char)cp;
                n = 1;
            } else if (cp < 0x800) {
                u[0] = (char)(0xC0 | cp >> 6);
                u[1] = (char)(0x80 | (cp & 63));
                n = 2;
            } else {
                u[0] = (char)(0xE0 | cp >> 12);
                u[1] = (char)(0x80 | ((cp >> 6) & 63));
                u[2] = (char)(0x80 | (cp & 63));
                n = 3;
            }
            js_append(&text, u, (size_t)n);
            k += (size_t)digits;
            rep = "";
            break;
        }
        default:   /* Python keeps an unknown escape as it is */
            js_append(&text, s + k - 1, 2);
            rep = "";
        }
        if (rep && *rep) js_puts(&text, rep);
    }
    if (k >= len) return fail(line, "a string is not closed (a quote is missing)", NULL);
    out->kind = JT_STRING;
    out->text = text.data ? text.data : "";
    out->len = text.len;
    *i = k + 1;
    return true;
}

static const char *OPS2[] = {"//", "**", "==", "!=", "<=", ">="};
static const char OPS1[] = "+-*/%~<>=()[]{},.:|";

/* Tokens of one tag's inside, up to its end; *i moves past the end marker.
 * *strip_after: "-" before the end; *plus: "+" before the end. */
static bool lex_tag(jarena *a, jtokens *t, const char *s, size_t len, size_t *i, int *line,
                    char close, bool *strip_after, bool *plus) {
    size_t k = *i;
    int depth = 0;   /* open ( [ {: as Jinja2's balancing stack, no tag ends inside them */
    for (;;) {
        while (k < len && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r')) {
            if (s[k] == '\n') (*line)++;
            k++;
        }
        if (k >= len) return fail(*line, "a tag is not closed (\"}}\" or \"%}\" is missing)", NULL);
        /* the end: "}}" or "%}", maybe after "-" or "+" */
        size_t e = k;
        char sign = 0;
        if ((s[e] == '-' || s[e] == '+') && e + 2 < len && s[e + 1] == close && s[e + 2] == '}')
            sign = s[e++];
        if (depth == 0 && e + 1 < len && s[e] == close && s[e + 1] == '}') {
            *strip_after = sign == '-';
            *plus = sign == '+';
            *i = e + 2;
            return true;
        }
        jtok tok = {.line = *line};
        char c = s[k];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            size_t b = k;
            while (k < len && ((s[k] >= 'a' && s[k] <= 'z') || (s[k] >= 'A' && s[k] <= 'Z') ||
                               (s[k] >= '0' && s[k] <= '9') || s[k] == '_'))
                k++;
            tok.kind = JT_NAME;
            tok.text = s + b;
            tok.len = k - b;
        } else if (c >= '0' && c <= '9') {
            size_t b = k;
            bool is_float = false;
            while (k < len && ((s[k] >= '0' && s[k] <= '9') || s[k] == '_')) k++;
            if (k + 1 < len && s[k] == '.' && s[k + 1] >= '0' && s[k + 1] <= '9') {
                is_float = true;
                k++;
                while (k < len && ((s[k] >= '0' && s[k] <= '9') || s[k] == '_')) k++;
            }
            if (k < len && (s[k] == 'e' || s[k] == 'E')) {
                size_t m = k + 1;
                if (m < len && (s[m] == '+' || s[m] == '-')) m++;
                if (m < len && s[m] >= '0' && s[m] <= '9') {
                    is_float = true;
                    k = m;
                    while (k < len && s[k] >= '0' && s[k] <= '9') k++;
                }
            }
            char num[64];
            size_t n = 0;
            for (size_t q = b; q < k && n + 1 < sizeof num; q++)
                if (s[q] != '_') num[n++] = s[q];
            num[n] = '\0';
            tok.kind = is_float ? JT_FLOAT : JT_INT;
            tok.f = strtod(num, NULL);
            errno = 0;
            tok.i = strtoll(num, NULL, 10);
            if (!is_float && errno == ERANGE)   /* Python's have no bound; ours 64 bits */
                return fail(*line, "an integer past the 64-bit integers a template may use: ",
                            num);
        } else if (c == '\'' || c == '"') {
            size_t from = k;
            if (!lex_string(a, s, len, &k, *line, &tok)) return false;
            tok.line = *line;
            *line += count_lines(s + from, k - from);   /* the source's lines, not \n escapes */
        } else {
            bool found = false;
            for (size_t o = 0; o < sizeof OPS2 / sizeof OPS2[0] && !found; o++)
                if (k + 1 < len && s[k] == OPS2[o][0] && s[k + 1] == OPS2[o][1]) {
                    tok.kind = JT_OP;
                    tok.text = OPS2[o];
                    tok.len = 2;
                    k += 2;
                    found = true;
                }
            if (!found && strchr(OPS1, c) && c) {
                tok.kind = JT_OP;
                tok.text = s + k;
                tok.len = 1;
                k++;
                found = true;
                if (c == '(' || c == '[' || c == '{') depth++;
                else if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
            }
            if (!found) {
                char what[16];
                snprintf(what, sizeof what, "'%c'", c);
                return fail(*line, "unexpected character ", what);
            }
        }
        if (!push(a, t, tok)) return false;
    }
}

bool jinja_lex(jarena *a, const char *src, size_t src_len, jtokens *out) {
    /* line ends to \n, one final \n dropped */
    char *s = ja_alloc(a, src_len + 1);
    if (!s) return false;
    size_t len = 0;
    for (size_t i = 0; i < src_len; i++) {
        if (src[i] == '\r') {
            s[len++] = '\n';
            if (i + 1 < src_len && src[i + 1] == '\n') i++;
        } else {
            s[len++] = src[i];
        }
    }
    if (len && s[len - 1] == '\n') len--;
    s[len] = '\0';

    size_t pos = 0;
    int line = 1;
    bool line_starting = true;
    while (pos <= len) {
        size_t at = pos;
        while (at + 1 < len && !(s[at] == '{' && (s[at + 1] == '{' || s[at + 1] == '%' ||
                                                   s[at + 1] == '#')))
            at++;
        if (at + 1 >= len) at = len;
        size_t text_len = at - pos;
        char kind = at < len ? s[at + 1] : 0;
        char sign = at + 2 < len && (s[at + 2] == '-' || s[at + 2] == '+') ? s[at + 2] : 0;
        if (kind && sign == '-') {
            text_len = rstrip_len(s + pos, text_len);
        } else if ((kind == '%' || kind == '#') && sign != '+') {
            size_t l_pos = 0;
            for (size_t q = 0; q < text_len; q++)
                if (s[pos + q] == '\n') l_pos = q + 1;
            if (l_pos > 0 || line_starting) {
                bool blank = true;
                for (size_t q = l_pos; q < text_len; q++)
                    if (s[pos + q] != ' ' && s[pos + q] != '\t') blank = false;
                if (blank) text_len = l_pos;
            }
        }
        if (text_len) {
            jtok tok = {.kind = JT_TEXT, .text = s + pos, .len = text_len, .line = line};
            if (!push(a, out, tok)) return false;
        }
        line += count_lines(s + pos, at - pos);
        if (!kind) break;
        size_t k = at + 2 + (sign ? 1 : 0);
        bool strip_after = false, plus = false;
        if (kind == '#') {
            const char *end = strstr(s + k, "#}");
            if (!end) return fail(line, "a comment is not closed (\"#}\" is missing)", NULL);
            size_t e = (size_t)(end - s);
            strip_after = e > k && s[e - 1] == '-';
            plus = e > k && s[e - 1] == '+';
            line += count_lines(s + k, e - k);
            k = e + 2;
        } else {
            jtok begin = {.kind = kind == '{' ? JT_VAR_BEGIN : JT_BLOCK_BEGIN, .line = line};
            if (!push(a, out, begin)) return false;
            if (!lex_tag(a, out, s, len, &k, &line, kind == '{' ? '}' : '%', &strip_after, &plus))
                return false;
            jtok end = {.kind = kind == '{' ? JT_VAR_END : JT_BLOCK_END, .line = line};
            if (!push(a, out, end)) return false;
        }
        line_starting = false;
        if (strip_after) {
            while (k < len) {
                size_t w = space_at(s, k, len);
                if (!w) break;
                if (s[k] == '\n') line++;
                k += w;
                line_starting = true;
            }
            line_starting = k > 0 && s[k - 1] == '\n';
        } else if (kind != '{' && !plus && k < len && s[k] == '\n') {
            k++;   /* trim_blocks */
            line++;
            line_starting = true;
        }
        pos = k;
    }
    jtok eof = {.kind = JT_EOF, .line = line};
    return push(a, out, eof);
}
