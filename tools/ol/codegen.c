#include "codegen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

int codegen_secret(ol_ctx *ctx, char out[HASH_HEX]) {
    char *path = path_join(ctx->cache, "secret");
    char *text = read_file(path, NULL);
    if (!text || strlen(text) != HASH_HEX - 1) {
        free(text);
        text = NULL;
        unsigned char raw[32];
        if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
            ol_error("cannot draw random bytes for build/ol/secret: %s", strerror(errno));
            free(path);
            return -1;
        }
        char hex[HASH_HEX];
        for (size_t i = 0; i < sizeof raw; i++) snprintf(hex + 2 * i, 3, "%02x", raw[i]);
        mkdir_p(ctx->cache);
        /* first writer wins (two checks at once agree on one secret) */
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            bool ok = write(fd, hex, HASH_HEX - 1) == HASH_HEX - 1;
            close(fd);
            if (!ok) unlink(path);
        } else if (errno == EEXIST) {
            unlink(path); /* a spoiled one: made again below */
            fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (fd >= 0) {
                if (write(fd, hex, HASH_HEX - 1) != HASH_HEX - 1) unlink(path);
                close(fd);
            }
        }
        text = read_file(path, NULL);
    }
    free(path);
    if (!text || strlen(text) != HASH_HEX - 1) {
        free(text);
        ol_error("cannot keep a secret in build/ol/secret");
        return -1;
    }
    memcpy(out, text, HASH_HEX);
    free(text);
    return 0;
}

void codegen_seed(const char *secret, const char *context, const char *build, char out[HASH_HEX]) {
    /* H(secret, H(secret, context, build)): the shape of an HMAC */
    char inner[HASH_HEX];
    hasher *h = hash_new();
    hash_str(h, "codegen-1");
    hash_str(h, secret);
    hash_str(h, context);
    hash_str(h, build);
    hash_done(h, inner);
    h = hash_new();
    hash_str(h, secret);
    hash_str(h, inner);
    hash_done(h, out);
}

long codegen_finish_line(const char secret[HASH_HEX], const char *test) {
    char digest[HASH_HEX];
    hasher *h = hash_new();
    hash_str(h, "finish-2");
    hash_str(h, secret);
    hash_str(h, test);
    hash_done(h, digest);
    char head[9];
    memcpy(head, digest, 8);
    head[8] = 0;
    return (long)(strtoul(head, NULL, 16) & ((1ul << 30) - 1)) + 1;
}

/* The seed's bits, a few at a time. */
typedef struct {
    const char *hex;
    int at;
} bits;

static unsigned pick(bits *b, unsigned n) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) { /* 16 bits from 4 hex digits */
        char c = b->hex[b->at++ % (HASH_HEX - 1)];
        v = v * 16 + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return v % n;
}

void codegen_flags(const char *seed, strlist *flags) {
    bits b = {seed, 0};
    static const unsigned ALIGN[] = {1, 2, 4, 8, 16, 32, 64};
    /* N nops at every function, M of them before its entry: at least one
     * after it, so even the first bytes differ from a plain build */
    unsigned n = 1 + pick(&b, 16), m = pick(&b, n);
    sl_push_owned(flags, xasprintf("-fpatchable-function-entry=%u,%u", n, m));
    static const char *const ALIGNED[] = {"functions", "loops", "jumps", "labels"};
    for (int i = 0; i < 4; i++)
        sl_push_owned(flags, xasprintf("-falign-%s=%u", ALIGNED[i], ALIGN[pick(&b, 7)]));
    static const char *const CHOICES[][4] = {
        {"-fomit-frame-pointer", "-fno-omit-frame-pointer", NULL},
        {"-fno-stack-protector", "-fstack-protector", "-fstack-protector-strong",
         "-fstack-protector-all"},
        {"-fschedule-insns2", "-fno-schedule-insns2", "-fschedule-insns", NULL},
        {"-fira-algorithm=CB", "-fira-algorithm=priority", NULL},
        {"-fira-region=one", "-fira-region=all", "-fira-region=mixed", NULL},
        {"-freorder-blocks-algorithm=simple", "-freorder-blocks-algorithm=stc", NULL},
        {"-ftoplevel-reorder", "-fno-toplevel-reorder", NULL},
        {"-fno-tree-vectorize", "-ftree-vectorize", NULL},
    };
    for (size_t i = 0; i < sizeof CHOICES / sizeof *CHOICES; i++) {
        unsigned count = 0;
        while (count < 4 && CHOICES[i][count]) count++;
        sl_push(flags, CHOICES[i][pick(&b, count)]);
    }
}
