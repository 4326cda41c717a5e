/* body.c: answers that carry a file's bytes, on the Hub (small files) and
 * on the CDN (LFS files): Range, then the body faults. The bytes are
 * streamed by a content reader, which is where a connection is cut, a byte
 * flipped, junk appended or the pace slowed. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hub_internal.h"

#define BLOCK_SIZE (64 * 1024)
#define JUNK_BYTE '#'

bool hub_sleep_ms(hub *h, int ms) {
    /* Short steps so hub_stop never waits for a long stall. */
    for (int left = ms; left > 0; left -= 10) {
        if (atomic_load(&h->stopping)) return false;
        int step = left < 10 ? left : 10;
        struct timespec ts = {0, (long)step * 1000000L};
        nanosleep(&ts, NULL);
    }
    return !atomic_load(&h->stopping);
}

typedef struct {
    hub *h;
    const unsigned char *data;  /* the whole file */
    uint64_t first;             /* file offset of the first byte sent */
    uint64_t content;           /* file bytes sent; junk follows them */
    uint64_t total;             /* bytes this body produces in all */
    bool error_at_end;          /* the headers promised more: close with an error */
    int64_t flip_at;            /* file offset of the inverted byte, or -1 */
    size_t trickle;             /* bytes per step when slowed down, else 0 */
    int trickle_ms;
} body_stream;

static ssize_t read_body(void *cls, uint64_t pos, char *buf, size_t max) {
    body_stream *s = cls;
    if (pos >= s->total)
        return s->error_at_end ? MHD_CONTENT_READER_END_WITH_ERROR
                               : MHD_CONTENT_READER_END_OF_STREAM;
    if (s->trickle) {
        /* The headers and first step go at once; each later step waits. */
        if (pos > 0 && !hub_sleep_ms(s->h, s->trickle_ms)) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (max > s->trickle) max = s->trickle;
    }
    uint64_t n = s->total - pos < max ? s->total - pos : max;
    uint64_t file_part = pos < s->content ? s->content - pos : 0;
    if (file_part > n) file_part = n;
    if (file_part) memcpy(buf, s->data + s->first + pos, (size_t)file_part);
    memset(buf + file_part, JUNK_BYTE, (size_t)(n - file_part));
    if (s->flip_at >= 0) {
        int64_t at = s->flip_at - (int64_t)(s->first + pos);
        if (at >= 0 && (uint64_t)at < file_part) buf[at] = (char)~buf[at];
    }
    return (ssize_t)n;
}

/* FLIP_BYTE counts only when the byte it names is in this answer. */
typedef struct { uint64_t size, first, content; } span;

static uint64_t flip_offset(const hub_fault *f, uint64_t size) {
    uint64_t at = f->n < 0 ? 0 : (uint64_t)f->n;
    return at >= size ? size - 1 : at;
}

static bool flip_in_span(const hub_fault *f, void *ctx) {
    const span *s = ctx;
    if (s->size == 0) return false;
    uint64_t at = flip_offset(f, s->size);
    return at >= s->first && at - s->first < s->content;
}

static struct MHD_Response *unsatisfiable(const hub_file *f, int *status) {
    char text[160], cr[48];
    snprintf(text, sizeof text, "Requested range not satisfiable: %s has %zu bytes\n",
             f->path, f->size);
    snprintf(cr, sizeof cr, "bytes */%zu", f->size);
    struct MHD_Response *resp = hub_text_response(text, "text/plain; charset=utf-8");
    if (resp) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
    *status = MHD_HTTP_RANGE_NOT_SATISFIABLE;
    return resp;
}

struct MHD_Response *hub_body_response(hub *h, hub_req *r, struct MHD_Connection *c,
                                       const hub_file *f, int *status) {
    bool get = !strcmp(r->method, "GET");
    const char *range_header =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE);
    uint64_t first = 0, last = 0;
    hub_range_kind range = hub_parse_range(range_header, f->size, &first, &last);
    hub_fault fl;

    if (range != HUB_RANGE_NONE && get &&
        hub_fault_take(h, r, HUB_FAULT_IGNORE_RANGE, NULL, NULL, NULL, NULL))
        range = HUB_RANGE_NONE;
    if (range == HUB_RANGE_OK && get &&
        hub_fault_take(h, r, HUB_FAULT_REFUSE_RANGE, NULL, NULL, NULL, NULL))
        range = HUB_RANGE_UNSATISFIABLE;
    if (range == HUB_RANGE_UNSATISFIABLE) return unsatisfiable(f, status);
    if (range == HUB_RANGE_OK && get &&
        hub_fault_take(h, r, HUB_FAULT_WHOLE_AS_206, NULL, NULL, NULL, NULL)) {
        first = 0;
        last = f->size - 1;
    }

    body_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    *s = (body_stream){.h = h, .data = f->data, .content = f->size, .flip_at = -1};
    *status = MHD_HTTP_OK;
    if (range == HUB_RANGE_OK) {
        if (get && hub_fault_take(h, r, HUB_FAULT_WRONG_RANGE_START, NULL, NULL, NULL, &fl)) {
            int64_t moved = (int64_t)first + (fl.n ? fl.n : 1);
            if (moved < 0) moved = 0;
            if ((uint64_t)moved > f->size - 1) moved = (int64_t)f->size - 1;
            first = (uint64_t)moved;
            if (first > last) last = first;
        }
        s->first = first;
        s->content = last - first + 1;
        *status = MHD_HTTP_PARTIAL_CONTENT;
    }
    uint64_t announced = s->content, extra = 0, stop = UINT64_MAX;
    bool no_length = false;

    if (get) {
        if (hub_fault_take(h, r, HUB_FAULT_CLOSE_AFTER, NULL, NULL, NULL, &fl)) {
            stop = fl.n < 0 ? 0 : (uint64_t)fl.n;
            no_length |= fl.no_content_length;
        }
        if (hub_fault_take(h, r, HUB_FAULT_BODY_LONGER, NULL, NULL, NULL, &fl)) {
            extra = fl.n > 0 ? (uint64_t)fl.n : 1;
            no_length |= fl.no_content_length;
        }
        if (hub_fault_take(h, r, HUB_FAULT_BODY_SHORTER, NULL, NULL, NULL, &fl)) {
            uint64_t missing = fl.n > 0 ? (uint64_t)fl.n : 1;
            s->content -= missing < s->content ? missing : s->content;
            no_length |= fl.no_content_length;
        }
        span sp = {f->size, s->first, s->content};
        if (hub_fault_take(h, r, HUB_FAULT_FLIP_BYTE, NULL, flip_in_span, &sp, &fl))
            s->flip_at = (int64_t)flip_offset(&fl, f->size);
        if (hub_fault_take(h, r, HUB_FAULT_TRICKLE, NULL, NULL, NULL, &fl)) {
            s->trickle = fl.n > 0 ? (size_t)fl.n : 1;
            s->trickle_ms = fl.ms > 0 ? fl.ms : 1000;
        }
    }
    s->total = s->content + extra;
    if (s->total > stop) s->total = stop;

    /* Three framings: honest Content-Length (cut short with an error when
     * it promised more); none, so the body ends at a clean close; or a
     * Content-Length below what follows, written by hand. */
    struct MHD_Response *resp;
    enum MHD_ResponseFlags flags = MHD_RF_NONE;
    if (no_length || s->total > announced) {
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, BLOCK_SIZE, read_body, s,
                                                 free);
        flags = MHD_RF_HTTP_1_0_COMPATIBLE_STRICT;
        if (!no_length) flags |= MHD_RF_INSANITY_HEADER_CONTENT_LENGTH;
    } else {
        s->error_at_end = s->total < announced;
        resp = MHD_create_response_from_callback(announced, BLOCK_SIZE, read_body, s, free);
    }
    if (!resp) {
        free(s);
        return NULL;
    }
    if (flags != MHD_RF_NONE) MHD_set_response_options(resp, flags, MHD_RO_END);
    char buf[96];
    if (!no_length && s->total > announced) {
        snprintf(buf, sizeof buf, "%" PRIu64, announced);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_LENGTH, buf);
    }
    if (*status == MHD_HTTP_PARTIAL_CONTENT) {
        snprintf(buf, sizeof buf, "bytes %" PRIu64 "-%" PRIu64 "/%zu", s->first,
                 s->first + announced - 1, f->size);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, buf);
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    return resp;
}
