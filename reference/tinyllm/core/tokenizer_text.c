/* tokenizer_text.c: bytes, UTF-8, Unicode predicates, GPT-2's byte table and
 * a string map, for the tokenizer (tokenizer.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <utf8proc.h>

#include "tinyllm/tensor.h"
#include "tokenizer_internal.h"

/* ---- growable byte buffers ------------------------------------------- */

int tk_buf_reserve(tk_buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data) {
        tl_fail("tokenizer: out of memory growing a buffer to %zu bytes", cap);
        return -1;
    }
    b->data = data;
    b->cap = cap;
    b->data[b->len] = '\0';   /* always a C string, even when nothing is appended */
    return 0;
}

int tk_buf_append(tk_buf *b, const void *data, size_t len) {
    if (tk_buf_reserve(b, len) < 0) return -1;
    if (len) memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int tk_buf_putc(tk_buf *b, char c) { return tk_buf_append(b, &c, 1); }

int tk_buf_put_cp(tk_buf *b, uint32_t cp) {
    char u[4];
    int n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return tk_buf_append(b, u, (size_t)n);
}

void tk_buf_free(tk_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* ---- UTF-8 ------------------------------------------------------------ */

/* The length of the valid sequence at s[0, len), or 0 when it is invalid.
 * *bad gets the length of the maximal invalid subpart (at least 1) then. */
static size_t utf8_sequence(const unsigned char *s, size_t len, size_t *bad) {
    unsigned char c = s[0];
    *bad = 1;
    if (c < 0x80) return 1;
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;   /* the allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c == 0xE0) need = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) need = 3;
    else if (c == 0xED) need = 3, hi = 0x9F;   /* no surrogates */
    else if (c >= 0xEE && c <= 0xEF) need = 3;
    else if (c == 0xF0) need = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) need = 4;
    else if (c == 0xF4) need = 4, hi = 0x8F;   /* nothing above U+10FFFF */
    else return 0;
    for (size_t i = 1; i < need; i++) {
        if (i >= len) {
            *bad = i;
            return 0;
        }
        unsigned char b = s[i];
        unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            *bad = i;
            return 0;
        }
    }
    return need;
}

size_t tk_utf8_valid_prefix(const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, bad;
    while (i < len) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t n = utf8_sequence(u + i, len - i, &bad);
        if (!n) return i;
        i += n;
    }
    return len;
}

int tk_utf8_decode(const char *s, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    if (u[0] < 0xE0) {
        *cp = (uint32_t)(u[0] & 0x1F) << 6 | (u[1] & 0x3F);
        return 2;
    }
    if (u[0] < 0xF0) {
        *cp = (uint32_t)(u[0] & 0x0F) << 12 | (uint32_t)(u[1] & 0x3F) << 6 | (u[2] & 0x3F);
        return 3;
    }
    *cp = (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3F) << 12 |
          (uint32_t)(u[2] & 0x3F) << 6 | (u[3] & 0x3F);
    return 4;
}

int tk_buf_append_lossy(tk_buf *b, const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0, bad;
    while (i < len) {
        size_t n = u[i] < 0x80 ? 1 : utf8_sequence(u + i, len - i, &bad);
        if (n) {
            i += n;
            continue;
        }
        if (tk_buf_append(b, s + run, i - run) < 0 || tk_buf_append(b, "\xEF\xBF\xBD", 3) < 0)
            return -1;
        i += bad;
        run = i;
    }
    return tk_buf_append(b, s + run, len - run);
}

/* ---- Unicode predicates ---------------------------------------------- */

bool tk_is_whitespace(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

bool tk_is_numeric(uint32_t c) {
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

/* Rust's regex crate \w (UTS #18): Alphabetic, marks, Nd, Pc and the joiners.
 * Not N* as a whole: ² and ½ (No) are not word characters, while letters in
 * circles and squares (So, but Other_Alphabetic) are. */
bool tk_is_word(uint32_t c) {
    if (c == 0x200C || c == 0x200D || (c >= 0x24B6 && c <= 0x24E9) ||
        (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
        (c >= 0x1F170 && c <= 0x1F189))
        return true;
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
           k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_PC ||
           (k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME);
}

bool tk_is_punctuation(uint32_t c) {
    if (c < 0x80)
        return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) ||
               (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

bool tk_is_mark(uint32_t c) {
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME;
}

/* ---- GPT-2's byte table ------------------------------------------------ */

/* Printable bytes (33-126, 161-172, 174-255) stand for themselves; the 68
 * others take 256, 257, ... in byte order. */
#define PRINTABLE(b) (((b) >= 33 && (b) <= 126) || ((b) >= 161 && (b) <= 172) || (b) >= 174)
const uint16_t TK_BYTE_CHAR[256] = {
    256, 257, 258, 259, 260, 261, 262, 263, 264, 265, 266, 267,
    268, 269, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279,
    280, 281, 282, 283, 284, 285, 286, 287, 288, 33, 34, 35,
    36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
    48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59,
    60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71,
    72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83,
    84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95,
    96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107,
    108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119,
    120, 121, 122, 123, 124, 125, 126, 289, 290, 291, 292, 293,
    294, 295, 296, 297, 298, 299, 300, 301, 302, 303, 304, 305,
    306, 307, 308, 309, 310, 311, 312, 313, 314, 315, 316, 317,
    318, 319, 320, 321, 322, 161, 162, 163, 164, 165, 166, 167,
    168, 169, 170, 171, 172, 323, 174, 175, 176, 177, 178, 179,
    180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191,
    192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203,
    204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215,
    216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227,
    228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239,
    240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251,
    252, 253, 254, 255,
};

/* The bytes that code points 256, 257, ... stand for. */
static const uint8_t EXTRA_BYTE[68] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
    12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
    24, 25, 26, 27, 28, 29, 30, 31, 32, 127, 128, 129,
    130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141,
    142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153,
    154, 155, 156, 157, 158, 159, 160, 173,
};

int tk_char_byte(uint32_t cp) {
    if (cp < 256) return PRINTABLE(cp) ? (int)cp : -1;
    return cp < 256 + 68 ? EXTRA_BYTE[cp - 256] : -1;
}

/* ---- the string map ---------------------------------------------------- */

/* FNV-1a's starting value, drawn once per process: keys a hostile
 * tokenizer.json chose to share slots under a known seed scatter under an
 * unknown one (a vocabulary of 100k such keys took 2.9 s to load). */
static uint32_t hash_seed = 2166136261u;
static pthread_once_t hash_seed_once = PTHREAD_ONCE_INIT;

static void draw_hash_seed(void) {
    uint32_t seed;
    if (getentropy(&seed, sizeof seed) == 0) hash_seed ^= seed;
}

uint32_t tk_hash(const void *data, size_t len) {
    /* FNV-1a; 0 is reserved for an empty slot */
    pthread_once(&hash_seed_once, draw_hash_seed);
    const unsigned char *p = data;
    uint32_t h = hash_seed;
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 16777619u;
    return h ? h : 1;
}

int tk_strmap_init(tk_strmap *m, size_t expected) {
    memset(m, 0, sizeof *m);
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    m->hashes = calloc(cap, sizeof *m->hashes);
    m->key_off = malloc(cap * sizeof *m->key_off);
    m->key_len = malloc(cap * sizeof *m->key_len);
    m->values = malloc(cap * sizeof *m->values);
    m->cap = cap;
    if (!m->hashes || !m->key_off || !m->key_len || !m->values) {
        tk_strmap_free(m);
        tl_fail("tokenizer: out of memory for a map of %zu entries", expected);
        return -1;
    }
    return 0;
}

static size_t find_slot(const tk_strmap *m, const char *key, size_t len, uint32_t h) {
    size_t mask = m->cap - 1, i = h & mask;
    while (m->hashes[i]) {
        if (m->hashes[i] == h && m->key_len[i] == len &&
            memcmp(m->keys.data + m->key_off[i], key, len) == 0)
            return i;
        i = (i + 1) & mask;
    }
    return i;
}

static int grow(tk_strmap *m) {
    tk_strmap bigger;
    if (tk_strmap_init(&bigger, m->cap) < 0) return -1;
    bigger.keys = m->keys;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->hashes[i]) continue;
        size_t j = m->hashes[i] & (bigger.cap - 1);   /* keys are unique: the first free slot */
        while (bigger.hashes[j]) j = (j + 1) & (bigger.cap - 1);
        bigger.hashes[j] = m->hashes[i];
        bigger.key_off[j] = m->key_off[i];
        bigger.key_len[j] = m->key_len[i];
        bigger.values[j] = m->values[i];
    }
    bigger.count = m->count;
    m->keys = (tk_buf){0};
    tk_strmap_free(m);
    *m = bigger;
    return 0;
}

int tk_strmap_put(tk_strmap *m, const char *key, size_t len, int32_t value) {
    if (len > UINT32_MAX) {
        tl_fail("tokenizer: a token of %zu bytes is too long", len);
        return -1;
    }
    if ((m->count + 1) * 2 > m->cap && grow(m) < 0) return -1;
    uint32_t h = tk_hash(key, len);
    size_t i = find_slot(m, key, len, h);
    if (m->hashes[i]) {
        m->values[i] = value;
        return 0;
    }
    size_t off = m->keys.len;
    if (tk_buf_append(&m->keys, key, len) < 0) return -1;
    m->hashes[i] = h;
    m->key_off[i] = (uint32_t)off;
    m->key_len[i] = (uint32_t)len;
    m->values[i] = value;
    m->count++;
    if (off > UINT32_MAX) {
        tl_fail("tokenizer: more than 4 GiB of token strings");
        return -1;
    }
    return 1;
}

int32_t tk_strmap_get(const tk_strmap *m, const char *key, size_t len) {
    if (!m->cap) return -1;
    size_t i = find_slot(m, key, len, tk_hash(key, len));
    return m->hashes[i] ? m->values[i] : -1;
}

void tk_strmap_free(tk_strmap *m) {
    free(m->hashes);
    free(m->key_off);
    free(m->key_len);
    free(m->values);
    tk_buf_free(&m->keys);
    memset(m, 0, sizeof *m);
}
