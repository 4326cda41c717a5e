/* safetensors (L0.6): every reader rule with its own message, zero-copy
 * views, exact conversions, and a writer that matches HF byte for byte. */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/bf16.h"
#include "tinyllm/safetensors.h"
#include "st_test_util.h"

/* Writes header + data into a fresh file and checks that tl_st_open refuses
 * it with a message naming the file and containing needle. */
#define assert_header_rejected(header, data_bytes, needle)                            \
    do {                                                                              \
        char *d_ = temp_dir();                                                        \
        const char *p_ = in_dir(d_, "bad.safetensors");                               \
        write_st(p_, (header), (data_bytes));                                         \
        assert_fails_naming(tl_st_open(p_), p_, (needle));                            \
        remove_tree(d_);                                                              \
    } while (0)

#define W_F32_2x3 "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}"

/* ---- files that are accepted --------------------------------------------- */

START_TEST(test_open_reads_entries_in_offset_order_with_metadata)
{
    tl_st_file *f = tl_st_open(fixture("core/st_golden.safetensors"));
    tl_assert_ok(f);
    const char *order[] = {"z.ids", "a.bias", "b.weight", "empty", "unicode.\xc3\xa9",
                           "a.count", "emb", "mask"};
    ck_assert_int_eq(f->count, 8);
    for (int i = 0; i < 8; i++) ck_assert_str_eq(f->entries[i].name, order[i]);
    ck_assert_int_eq(f->meta_count, 1);
    ck_assert_str_eq(f->meta_keys[0], "format");
    ck_assert_str_eq(f->meta_values[0], "pt");
    ck_assert_uint_eq(f->data_start % 8, 0);
    const tl_st_entry *e = tl_st_find(f, "b.weight");
    tl_assert_ok(e);
    ck_assert_int_eq(e->dtype, TL_ST_F32);
    ck_assert_int_eq(e->ndim, 2);
    ck_assert_int_eq(e->shape[0], 2);
    ck_assert_int_eq(e->shape[1], 3);
    ck_assert_uint_eq(e->end - e->begin, 24);
    tl_st_close(f);
}
END_TEST

START_TEST(test_zero_sized_and_rank_zero_tensors_are_allowed)
{
    tl_st_file *f = tl_st_open(fixture("core/st_golden.safetensors"));
    tl_assert_ok(f);
    const tl_st_entry *empty = tl_st_find(f, "empty"), *count = tl_st_find(f, "a.count");
    ck_assert_int_eq(empty->shape[0], 0);
    ck_assert_uint_eq(empty->begin, empty->end);
    ck_assert_int_eq(count->ndim, 0);
    tl_tensor *t0 = tl_st_tensor(f, empty, TL_F32), *t1 = tl_st_tensor(f, count, TL_I32);
    tl_assert_ok(t0);
    tl_assert_ok(t1);
    ck_assert_int_eq(tl_numel(t0), 0);
    ck_assert_int_eq(t1->ndim, 0);
    ck_assert(tl_item(t1) == 7);
    tl_tensor_free(t0);
    tl_tensor_free(t1);
    tl_st_close(f);
}
END_TEST

START_TEST(test_empty_header_and_null_metadata_are_accepted)
{
    char *d = temp_dir();
    write_st(in_dir(d, "a.safetensors"), "{}", 0);
    write_st(in_dir(d, "b.safetensors"), "{\"__metadata__\":null}  ", 0);
    write_st(in_dir(d, "c.safetensors"),
             "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1}}", 4);
    const char *names[] = {"a.safetensors", "b.safetensors", "c.safetensors"};
    for (int i = 0; i < 3; i++) {
        tl_st_file *f = tl_st_open(in_dir(d, names[i]));
        tl_assert_ok(f);
        ck_assert_int_eq(f->meta_count, 0);
        ck_assert_int_eq(f->count, i == 2 ? 1 : 0);
        tl_st_close(f);
    }
    remove_tree(d);
}
END_TEST

/* ---- one test per reader rule ----------------------------------------------- */

START_TEST(test_reject_file_shorter_than_8_bytes)
{
    char *d = temp_dir();
    const char *p = in_dir(d, "short.safetensors");
    write_bytes(p, "\x02\x00\x00", 3);
    assert_fails_naming(tl_st_open(p), p, "file is 3 bytes, shorter than the 8-byte header length");
    write_bytes(p, "", 0);
    assert_fails_naming(tl_st_open(p), p, "file is 0 bytes");
    remove_tree(d);
}
END_TEST

START_TEST(test_reject_header_length_over_100mb)
{
    char *d = temp_dir();
    const char *p = in_dir(d, "huge.safetensors");
    unsigned char bytes[16] = {0x01, 0xE1, 0xF5, 0x05, 0, 0, 0, 0, '{', '}'};   /* 100000001 */
    write_bytes(p, bytes, sizeof bytes);
    assert_fails_naming(tl_st_open(p), p,
                        "header length 100000001 is over the 100000000-byte limit");
    memset(bytes, 0xFF, 8);   /* 2^64 - 1 must not wrap around any sum */
    write_bytes(p, bytes, sizeof bytes);
    assert_fails_naming(tl_st_open(p), p, "over the 100000000-byte limit");
    remove_tree(d);
}
END_TEST

START_TEST(test_reject_header_longer_than_the_file)
{
    char *d = temp_dir();
    const char *p = in_dir(d, "cut.safetensors");
    unsigned char bytes[12] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    write_bytes(p, bytes, sizeof bytes);
    assert_fails_naming(tl_st_open(p), p,
                        "header length 100 runs past the end of the file (12 bytes)");
    remove_tree(d);
}
END_TEST

START_TEST(test_reject_invalid_utf8_header)
{
    assert_header_rejected("{\"w\xc3\x28\":{}}", 0, "header is not valid UTF-8");
    assert_header_rejected("{\"\xc0\xaf\":{}}", 0, "not valid UTF-8");          /* overlong */
    assert_header_rejected("{\"\xed\xa0\x80\":{}}", 0, "not valid UTF-8");      /* surrogate */
    assert_header_rejected("{\"\xf4\x90\x80\x80\":{}}", 0, "not valid UTF-8");  /* > U+10FFFF */
    assert_header_rejected("{\"\xe2\x82\":{}}", 0, "not valid UTF-8");          /* cut short */
}
END_TEST

START_TEST(test_reject_invalid_json_header)
{
    assert_header_rejected("{\"w\":", 0, "header is not valid JSON (error at header offset");
    assert_header_rejected("{} x", 0, "header is not valid JSON");              /* trailing text */
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\"}},", 0, "header is not valid JSON");
    assert_header_rejected("{\"a\nb\":{}}", 0, "raw control byte inside a string");
    assert_header_rejected("", 0, "header is not valid JSON");
}
END_TEST

/* cJSON turns \u0000 into a NUL that ends the C string: "a\u0000b" would
 * load as "a", and "__metadata__\u0000x" as the metadata. */
START_TEST(test_reject_nul_escape_in_names_and_metadata)
{
    assert_header_rejected("{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],"
                           "\"data_offsets\":[0,4]}}", 4,
                           "header holds a \\u0000 escape (a NUL character), which names and "
                           "metadata cannot hold (byte 0x5c at header offset 3)");
    assert_header_rejected("{\"__metadata__\\u0000x\":{\"k\":\"v\"}}", 0, "\\u0000 escape");
    assert_header_rejected("{\"__metadata__\":{\"k\":\"v\\u0000hidden\"}}", 0,
                           "\\u0000 escape");
    /* other escapes, and a literal backslash before u0000, are fine */
    char *d = temp_dir();
    const char *p = in_dir(d, "ok.safetensors");
    write_st(p, "{\"__metadata__\":{\"k\":\"\\\\u0000\",\"e\":\"\\u00e9\\u0001\"}}", 0);
    tl_st_file *f = tl_st_open(p);
    tl_assert_ok(f);
    ck_assert_str_eq(f->meta_values[0], "\\u0000");
    ck_assert_str_eq(f->meta_values[1], "\xc3\xa9\x01");
    tl_st_close(f);
    remove_tree(d);
}
END_TEST

/* serde_json takes 127 levels; cJSON 1000, with a bare "not valid JSON". */
START_TEST(test_reject_json_nested_too_deep)
{
    static const int depths[] = {127, 128, 2000};
    char header[4200];
    for (int k = 0; k < 3; k++) {
        int o = snprintf(header, sizeof header, "{\"__metadata__\":");
        for (int i = 1; i < depths[k]; i++) header[o++] = '[';   /* the root is level 1 */
        for (int i = 1; i < depths[k]; i++) header[o++] = ']';
        snprintf(header + o, sizeof header - o, "}");
        assert_header_rejected(header, 0, depths[k] == 127 ? "\"__metadata__\" is not an object"
                               : "arrays and objects nest more than 127 deep (serde_json's limit)");
    }
}
END_TEST

/* cJSON hands number characters to strtod, which takes more than JSON does. */
START_TEST(test_reject_numbers_json_does_not_allow)
{
    static const char *bad[] = {"01", "1.", "-.5", "1.e2", "1e", "-", "2e+", "00", "1.5.2", "-01"};
    char header[160];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(header, sizeof header,
                 "{\"w\":{\"dtype\":\"U8\",\"shape\":[%s],\"data_offsets\":[0,0]}}", bad[i]);
        assert_header_rejected(header, 0, "header is not valid JSON: a malformed number");
    }
    /* JSON's own spellings of whole numbers are accepted */
    static const char *good[] = {"0", "2", "2.0", "2e0", "20E-1", "0.2e1", "-0"};
    char *d = temp_dir();
    const char *p = in_dir(d, "ok.safetensors");
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        snprintf(header, sizeof header,
                 "{\"w\":{\"dtype\":\"U8\",\"shape\":[%s],\"data_offsets\":[0,%s]}}", good[i],
                 good[i]);
        write_st(p, header, strcmp(good[i], "0") == 0 || strcmp(good[i], "-0") == 0 ? 0 : 2);
        tl_st_file *f = tl_st_open(p);
        ck_assert_msg(f != NULL, "%s refused: %s", good[i], tl_error());
        tl_st_close(f);
    }
    remove_tree(d);
}
END_TEST

START_TEST(test_reject_nul_byte_in_header)
{
    char *d = temp_dir();
    const char *p = in_dir(d, "nul.safetensors");
    unsigned char bytes[16] = {8, 0, 0, 0, 0, 0, 0, 0, '{', '}', 0, 'x', 'x', ' ', ' ', ' '};
    write_bytes(p, bytes, sizeof bytes);
    assert_fails_naming(tl_st_open(p), p,
                        "a control byte outside any string (byte 0x00 at header offset 2)");
    remove_tree(d);
}
END_TEST

START_TEST(test_reject_header_that_is_not_an_object)
{
    assert_header_rejected("[1,2]", 0, "header is an array, not a JSON object");
    assert_header_rejected("\"x\"", 0, "header is a string, not a JSON object");
}
END_TEST

START_TEST(test_reject_duplicate_keys)
{
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                           "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                           8, "tensor \"w\": duplicate key in the header");
    /* the same name spelt with an escape is the same key */
    assert_header_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                           "\"\\u0061\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                           8, "tensor \"a\": duplicate key in the header");
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],"
                           "\"data_offsets\":[0,4]}}", 4,
                           "tensor \"w\": duplicate key \"dtype\" in its entry");
    assert_header_rejected("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0,
                           "duplicate key \"k\" in \"__metadata__\"");
}
END_TEST

START_TEST(test_reject_entry_missing_a_field)
{
    assert_header_rejected("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                           "tensor \"w\": entry has no \"dtype\"");
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4,
                           "tensor \"w\": entry has no \"shape\"");
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4,
                           "tensor \"w\": entry has no \"data_offsets\"");
}
END_TEST

START_TEST(test_reject_entry_fields_of_the_wrong_type)
{
    assert_header_rejected("{\"w\":3}", 0, "tensor \"w\": entry is 3, not an object");
    assert_header_rejected("{\"w\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                           "tensor \"w\": \"dtype\" is 5, not a string");
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":\"1\",\"data_offsets\":[0,4]}}", 4,
                           "tensor \"w\": \"shape\" is a string, not an array");
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
                           "tensor \"w\": \"data_offsets\" must be an array [begin, end]");
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}}", 4,
                           "\"data_offsets\" must be an array [begin, end]");
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,\"4\"]}}",
                           4, "tensor \"w\": \"data_offsets\" [0, a string] must be two integers "
                           "from 0 to 2^53");
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}",
                           4, "\"data_offsets\" [-4, 0] must be two integers");
    /* offsets near 2^64 are past what a double holds exactly: refused, not wrapped */
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
                           "[18446744073709551612,18446744073709551616]}}", 4,
                           "\"data_offsets\" [1.8446744073709552e+19, 1.8446744073709552e+19] "
                           "must be two integers from 0 to 2^53");
}
END_TEST

START_TEST(test_reject_unknown_dtype)
{
    assert_header_rejected("{\"w\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}", 1,
                           "tensor \"w\": unknown dtype \"F4\" (known: BOOL");
    assert_header_rejected("{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                           "unknown dtype \"f32\"");   /* names are case-sensitive */
}
END_TEST

START_TEST(test_reject_negative_or_fractional_shape)
{
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0,
                           "tensor \"w\": shape[0] is -1, not a whole number from 0 to 2^53");
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,1.5],\"data_offsets\":[0,12]}}",
                           12, "tensor \"w\": shape[1] is 1.5, not a whole number from 0 to 2^53");
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[null],\"data_offsets\":[0,4]}}", 4,
                           "shape[0] is null");
}
END_TEST

START_TEST(test_reject_rank_above_max_dims)
{
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1],"
                           "\"data_offsets\":[0,4]}}", 4,
                           "tensor \"w\": shape has 7 dimensions; tinyllm tensors have at most 6");
}
END_TEST

START_TEST(test_reject_shape_whose_size_overflows)
{
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                           "\"data_offsets\":[0,0]}}", 0,
                           "tensor \"w\": shape[1] = 4294967296 makes the shape too large: its "
                           "nonzero dimensions multiply past 2^60");
    /* product past 2^64: the check must not wrap around to a small number */
    assert_header_rejected("{\"w\":{\"dtype\":\"U8\",\"shape\":[9007199254740992,"
                           "9007199254740992,9007199254740992],\"data_offsets\":[0,0]}}", 0,
                           "shape[1] = 9007199254740992 makes the shape too large");
}
END_TEST

/* A zero dimension makes numel 0, but the runtime's strides are products of
 * the other dimensions: they must fit too, or tl_st_tensor fails later with
 * a message that names no file. */
START_TEST(test_reject_zero_sized_shape_whose_strides_overflow)
{
    assert_header_rejected("{\"z\":{\"dtype\":\"F32\",\"shape\":[0,9007199254740992,"
                           "9007199254740992],\"data_offsets\":[0,0]}}", 0,
                           "tensor \"z\": shape[2] = 9007199254740992 makes the shape too large");
    assert_header_rejected("{\"z\":{\"dtype\":\"F32\",\"shape\":[9007199254740992,"
                           "9007199254740992,0],\"data_offsets\":[0,0]}}", 0,
                           "tensor \"z\": shape[1] = 9007199254740992 makes the shape too large");
    assert_header_rejected("{\"z\":{\"dtype\":\"F32\",\"shape\":[0,1073741824,1073741824],"
                           "\"data_offsets\":[0,0]}}", 0, "past 2^60");   /* exactly 2^60 */
    /* the largest span the runtime takes, 2^60 - 1 = (2^30 - 1)(2^30 + 1)
     * elements, is still a valid empty tensor */
    char *d = temp_dir();
    const char *p = in_dir(d, "edge.safetensors");
    write_st(p, "{\"z\":{\"dtype\":\"I64\",\"shape\":[0,1073741823,1073741825],"
                "\"data_offsets\":[0,0]}}", 0);
    tl_st_file *f = tl_st_open(p);
    tl_assert_ok(f);
    tl_tensor *t = tl_st_tensor(f, &f->entries[0], TL_I64);
    tl_assert_ok(t);
    ck_assert_int_eq(tl_numel(t), 0);
    tl_tensor_free(t);
    tl_st_close(f);
    remove_tree(d);
}
END_TEST

START_TEST(test_reject_first_tensor_not_at_offset_zero)
{
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
                           "tensor \"w\": the first tensor's data begins at byte 4 of the data "
                           "section, not 0");
}
END_TEST

START_TEST(test_reject_gap_between_tensors)
{
    assert_header_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                           "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12,
                           "tensor \"b\": data begins at byte 8 but \"a\" ends at 4: a gap");
}
END_TEST

START_TEST(test_reject_overlapping_tensors)
{
    assert_header_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                           "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
                           "tensor \"b\": data begins at byte 4, inside \"a\" which ends at 8: "
                           "the tensors overlap");
    /* a zero-sized tensor inside another one overlaps too */
    assert_header_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                           "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}", 8,
                           "tensor \"z\": data begins at byte 4, inside \"a\"");
}
END_TEST

START_TEST(test_reject_offsets_that_end_before_they_begin)
{
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", 8,
                           "tensor \"w\": data_offsets [8, 4] end before they begin");
}
END_TEST

START_TEST(test_reject_byte_count_not_numel_times_size)
{
    assert_header_rejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}",
                           20,
                           "tensor \"w\": data_offsets [0, 20] hold 20 bytes but F32 of this "
                           "shape needs 24 (numel 6 x 4 bytes)");
    assert_header_rejected("{\"w\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,12]}}", 12,
                           "hold 12 bytes but BF16 of this shape needs 6");
}
END_TEST

START_TEST(test_reject_data_section_not_ending_at_the_file_end)
{
    assert_header_rejected(W_F32_2x3, 25, "the tensors' data ends at byte 24 but the file holds 25 "
                           "data bytes after the header (trailing bytes no tensor accounts for)");
    assert_header_rejected(W_F32_2x3, 23, "holds 23 data bytes after the header (the file is "
                           "truncated)");
    assert_header_rejected("{}", 1, "trailing bytes");
}
END_TEST

START_TEST(test_reject_metadata_that_is_not_string_pairs)
{
    assert_header_rejected("{\"__metadata__\":{\"format\":\"pt\",\"k\":1}}", 0,
                           "\"__metadata__\" value of \"k\" is 1, not a string");
    assert_header_rejected("{\"__metadata__\":{\"k\":[\"a\"]}}", 0,
                           "\"__metadata__\" value of \"k\" is an array, not a string");
    assert_header_rejected("{\"__metadata__\":[]}", 0,
                           "\"__metadata__\" is not an object of string pairs");
}
END_TEST

START_TEST(test_open_errors_for_missing_file_and_folder)
{
    char *d = temp_dir();
    const char *p = in_dir(d, "absent.safetensors");
    assert_fails_naming(tl_st_open(p), p, "cannot open: No such file or directory");
    assert_fails_naming(tl_st_open(d), d, "is a folder, not a file");
    remove_tree(d);
}
END_TEST

/* Only regular files are read: a FIFO would block open() until a writer
 * came, and a device has no end. */
START_TEST(test_open_refuses_fifos_devices_and_broken_links)
{
    char *d = temp_dir();
    const char *fifo = in_dir(d, "fifo.safetensors");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    assert_fails_naming(tl_st_open(fifo), fifo, "is a FIFO (named pipe), not a regular file");
    assert_fails_naming(tl_st_open("/dev/zero"), "/dev/zero",
                        "is a character device, not a regular file");
    const char *dangling = in_dir(d, "dangling.safetensors");
    ck_assert_int_eq(symlink("gone.safetensors", dangling), 0);
    assert_fails_naming(tl_st_open(dangling), dangling,
                        "cannot open: it is a symlink to a file that does not exist");
    const char *loop = in_dir(d, "loop.safetensors");
    ck_assert_int_eq(symlink("loop.safetensors", loop), 0);
    assert_fails_naming(tl_st_open(loop), loop, "cannot open: a loop of symlinks");
    const char *empty = in_dir(d, "empty.safetensors");
    write_bytes(empty, "", 0);
    assert_fails_naming(tl_st_open(empty), empty, "file is 0 bytes, shorter than the 8-byte "
                        "header length: an empty file (an interrupted download?)");
    remove_tree(d);
}
END_TEST

START_TEST(test_error_names_are_escaped_and_cut)
{
    char header[600];
    char name[300];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    name[0] = '\x7f';
    snprintf(header, sizeof header,
             "{\"%s\":{\"dtype\":\"X\",\"shape\":[],\"data_offsets\":[0,0]}}", name);
    assert_header_rejected(header, 0, "tensor \"\\x7fnnnn");
    char *d = temp_dir();
    const char *p = in_dir(d, "long.safetensors");
    write_st(p, header, 0);
    tl_clear_error();
    ck_assert_ptr_null(tl_st_open(p));
    ck_assert_msg(strstr(tl_error(), "...") && !strstr(tl_error(), name + 1),
                  "a 300-character name should be cut: %s", tl_error());
    tl_clear_error();
    remove_tree(d);
}
END_TEST

/* ---- tensors: zero-copy views and exact conversions -------------------------- */

START_TEST(test_stored_dtype_gives_a_zero_copy_view_of_the_map)
{
    tl_st_file *f = tl_st_open(fixture("core/st_golden.safetensors"));
    tl_assert_ok(f);
    const struct { const char *name; tl_dtype dt; } cases[] = {
        {"b.weight", TL_F32}, {"emb", TL_BF16}, {"z.ids", TL_I64}, {"mask", TL_BOOL}};
    for (int i = 0; i < 4; i++) {
        const tl_st_entry *e = tl_st_find(f, cases[i].name);
        tl_tensor *t = tl_st_tensor(f, e, cases[i].dt);
        tl_assert_ok(t);
        const unsigned char *p = tl_data(t);
        ck_assert_msg(p == f->map + f->data_start + e->begin,
                      "%s should point into the map", cases[i].name);
        ck_assert(p >= f->map && p + (e->end - e->begin) <= f->map + f->map_size);
        int64_t zero[TL_MAX_DIMS] = {0};
        ck_assert_msg(tl_set(t, zero, 1.0) != 0, "a view of the map must be read-only");
        tl_clear_error();
        tl_tensor_free(t);
    }
    tl_st_close(f);
}
END_TEST

START_TEST(test_bf16_reads_as_f32_exactly)
{
    tl_st_file *f = tl_st_open(fixture("core/st_golden.safetensors"));
    tl_assert_ok(f);
    const tl_st_entry *e = tl_st_find(f, "emb");
    tl_tensor *t = tl_st_tensor(f, e, TL_F32);
    tl_assert_ok(t);
    ck_assert_int_eq(t->dtype, TL_F32);
    const unsigned char *raw = f->map + f->data_start + e->begin;
    const float *v = tl_f32(t);
    for (int i = 0; i < 8; i++) {
        uint16_t h;
        memcpy(&h, raw + 2 * i, 2);
        uint32_t bits;
        memcpy(&bits, &v[i], 4);
        ck_assert_uint_eq(bits, (uint32_t)h << 16);
    }
    tl_tensor_free(t);
    tl_st_close(f);
}
END_TEST

START_TEST(test_f16_reads_as_f32_exactly_like_torch)
{
    tl_st_file *f = tl_st_open(fixture("core/st_f16.safetensors"));
    tl_assert_ok(f);
    tl_tensor *h = tl_st_tensor(f, tl_st_find(f, "h"), TL_F32);
    tl_tensor *want = tl_st_tensor(f, tl_st_find(f, "h_as_f32"), TL_F32);
    tl_assert_ok(h);
    tl_assert_ok(want);
    ck_assert_int_eq(tl_numel(h), 13);
    ck_assert_msg(memcmp(tl_data(h), tl_data(want), 13 * 4) == 0,
                  "F16 -> F32 differs from torch's widening");
    tl_tensor_free(h);
    tl_tensor_free(want);
    tl_st_close(f);
}
END_TEST

START_TEST(test_integer_widening_and_lossy_conversions)
{
    tl_st_file *f = tl_st_open(fixture("core/st_golden.safetensors"));
    tl_assert_ok(f);
    tl_tensor *c = tl_st_tensor(f, tl_st_find(f, "a.count"), TL_I64);   /* I32 -> I64: exact */
    tl_assert_ok(c);
    ck_assert_int_eq(c->dtype, TL_I64);
    ck_assert(tl_item(c) == 7);
    tl_tensor_free(c);
    const char *path = f->path;
    assert_fails_naming(tl_st_tensor(f, tl_st_find(f, "b.weight"), TL_BF16), path,
                        "tensor \"b.weight\" is stored as F32, which cannot become BF16 without "
                        "losing information");
    assert_fails_naming(tl_st_tensor(f, tl_st_find(f, "z.ids"), TL_I32), path,
                        "stored as I64, which cannot become I32");
    assert_fails_naming(tl_st_tensor(f, tl_st_find(f, "z.ids"), TL_F32), path,
                        "stored as I64, which cannot become F32");
    tl_st_close(f);
}
END_TEST

START_TEST(test_misaligned_data_is_copied_not_viewed)
{
    /* A header of odd length (not what HF writes) leaves the F32 data at an
     * address that is not 4-aligned: the reader must copy, not alias. */
    char *d = temp_dir();
    const char *p = in_dir(d, "odd.safetensors");
    const char *header = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    ck_assert_uint_ne((8 + strlen(header)) % 4, 0);
    float vals[2] = {1.25f, -3.5f};
    size_t h = strlen(header);
    unsigned char buf[128];
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(h >> (8 * i));
    memcpy(buf + 8, header, h);
    memcpy(buf + 8 + h, vals, 8);
    write_bytes(p, buf, 8 + h + 8);
    tl_st_file *f = tl_st_open(p);
    tl_assert_ok(f);
    tl_tensor *t = tl_st_tensor(f, &f->entries[0], TL_F32);
    tl_assert_ok(t);
    ck_assert((uintptr_t)tl_data(t) % 4 == 0);
    ck_assert(tl_f32(t)[0] == 1.25f && tl_f32(t)[1] == -3.5f);
    tl_tensor_free(t);
    tl_st_close(f);
    remove_tree(d);
}
END_TEST

START_TEST(test_find_names_the_missing_tensor)
{
    tl_st_file *f = tl_st_open(fixture("core/st_golden.safetensors"));
    tl_assert_ok(f);
    assert_fails_naming(tl_st_find(f, "lm_head.weight"), f->path,
                        "no tensor named \"lm_head.weight\" (the file holds 8)");
    ck_assert_str_eq(tl_st_dtype_name(TL_ST_F8_E4M3), "F8_E4M3");
    tl_st_close(f);
}
END_TEST

/* ---- the writer --------------------------------------------------------------- */

/* Each golden tensor in its stored dtype, as an owned state dict in the
 * given order. */
static tl_state_dict golden_dict(tl_st_file *f, bool reversed) {
    tl_state_dict sd = {calloc((size_t)f->count, sizeof(tl_named_tensor)), f->count};
    for (int i = 0; i < f->count; i++) {
        const tl_st_entry *e = &f->entries[reversed ? f->count - 1 - i : i];
        tl_dtype dt = e->dtype == TL_ST_F32 ? TL_F32 : e->dtype == TL_ST_BF16 ? TL_BF16
                    : e->dtype == TL_ST_I32 ? TL_I32 : e->dtype == TL_ST_I64 ? TL_I64 : TL_BOOL;
        sd.items[i].name = e->name;
        sd.items[i].tensor = tl_st_tensor(f, e, dt);
        tl_assert_ok(sd.items[i].tensor);
    }
    return sd;
}

static void free_dict(tl_state_dict *sd) {
    for (int i = 0; i < sd->count; i++) tl_tensor_free(sd->items[i].tensor);
    free(sd->items);
}

static void assert_same_file(const char *got_path, const char *want_path) {
    size_t ng, nw;
    unsigned char *got = read_all(got_path, &ng), *want = read_all(want_path, &nw);
    size_t first = 0;
    while (first < ng && first < nw && got[first] == want[first]) first++;
    ck_assert_msg(ng == nw && first == ng, "%s differs from %s at byte %zu (sizes %zu and %zu)",
                  got_path, want_path, first, ng, nw);
    free(got);
    free(want);
}

START_TEST(test_writer_matches_the_rust_layout_byte_for_byte)
{
    tl_st_file *f = tl_st_open(fixture("core/st_golden.safetensors"));
    tl_assert_ok(f);
    tl_state_dict sd = golden_dict(f, true);   /* any input order gives HF's order */
    char *d = temp_dir();
    const char *out = in_dir(d, "out.safetensors");
    ck_assert_int_eq(tl_st_save(out, &sd, -1, NULL, NULL, 0), 0);
    assert_same_file(out, fixture("core/st_golden.safetensors"));
    ck_assert(!temp_left(d, "out.safetensors"));
    free_dict(&sd);
    tl_st_close(f);
    remove_tree(d);
}
END_TEST

START_TEST(test_writer_bf16_matches_torch_byte_for_byte)
{
    tl_st_file *f = tl_st_open(fixture("core/st_bf16_source.safetensors"));
    tl_assert_ok(f);
    tl_state_dict sd = golden_dict(f, false);
    char *d = temp_dir();
    const char *out = in_dir(d, "x.safetensors");
    ck_assert_int_eq(tl_st_save(out, &sd, TL_BF16, NULL, NULL, 0), 0);
    assert_same_file(out, fixture("core/st_bf16_saved.safetensors"));
    free_dict(&sd);
    tl_st_close(f);
    remove_tree(d);
}
END_TEST

START_TEST(test_writer_pads_the_header_with_spaces_to_8)
{
    char *d = temp_dir();
    const char *out = in_dir(d, "pad.safetensors");
    tl_tensor *t = tl_tensor_new_owned(TL_F32, TL_SHAPE(1));
    for (int len = 1; len <= 16; len++) {
        char name[17];
        memset(name, 'a', (size_t)len);
        name[len] = '\0';
        tl_named_tensor item = {name, t, false};
        tl_state_dict sd = {&item, 1};
        ck_assert_int_eq(tl_st_save(out, &sd, -1, NULL, NULL, 0), 0);
        size_t n;
        unsigned char *b = read_all(out, &n);
        uint64_t h = 0;
        for (int i = 7; i >= 0; i--) h = (h << 8) | b[i];
        ck_assert_uint_eq(h % 8, 0);
        ck_assert_uint_eq(n, 8 + h + 4);
        size_t json_end = 8 + h;
        while (b[json_end - 1] == ' ') json_end--;
        ck_assert_msg(b[json_end - 1] == '}', "padding must be spaces after the JSON");
        ck_assert_uint_lt(8 + h - json_end, 8);
        free(b);
    }
    tl_tensor_free(t);
    remove_tree(d);
}
END_TEST

START_TEST(test_f32_round_trip_is_bit_exact)
{
    enum { N = 4096 };
    tl_tensor *t = tl_tensor_new_owned(TL_F32, TL_SHAPE(64, 64));
    uint32_t *bits = tl_data(t);
    uint64_t s = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        bits[i] = (uint32_t)(s >> 32);   /* NaN payloads, subnormals, infinities included */
    }
    bits[0] = 0x7F800001u, bits[1] = 0x00000001u, bits[2] = 0xFF800000u, bits[3] = 0x80000000u;
    char *d = temp_dir();
    const char *out = in_dir(d, "rt.safetensors");
    tl_named_tensor item = {"w", t, false};
    tl_state_dict sd = {&item, 1};
    ck_assert_int_eq(tl_st_save(out, &sd, TL_F32, NULL, NULL, 0), 0);
    tl_st_file *f = tl_st_open(out);
    tl_assert_ok(f);
    tl_tensor *back = tl_st_tensor(f, tl_st_find(f, "w"), TL_F32);
    tl_assert_ok(back);
    ck_assert(memcmp(tl_data(back), bits, N * 4) == 0);
    tl_tensor_free(back);
    tl_st_close(f);
    tl_tensor_free(t);
    remove_tree(d);
}
END_TEST

START_TEST(test_writer_converts_bf16_to_f32_and_keeps_integers)
{
    tl_st_file *src = tl_st_open(fixture("core/st_golden.safetensors"));
    tl_assert_ok(src);
    tl_state_dict sd = golden_dict(src, false);
    char *d = temp_dir();
    const char *out = in_dir(d, "f32.safetensors");
    ck_assert_int_eq(tl_st_save(out, &sd, TL_F32, NULL, NULL, 0), 0);
    tl_st_file *f = tl_st_open(out);
    tl_assert_ok(f);
    ck_assert_int_eq(tl_st_find(f, "emb")->dtype, TL_ST_F32);
    ck_assert_int_eq(tl_st_find(f, "z.ids")->dtype, TL_ST_I64);
    ck_assert_int_eq(tl_st_find(f, "mask")->dtype, TL_ST_BOOL);
    tl_tensor *a = tl_st_tensor(src, tl_st_find(src, "emb"), TL_F32);
    tl_tensor *b = tl_st_tensor(f, tl_st_find(f, "emb"), TL_F32);
    ck_assert(memcmp(tl_data(a), tl_data(b), 8 * 4) == 0);
    tl_tensor_free(a);
    tl_tensor_free(b);
    tl_st_close(f);
    free_dict(&sd);
    tl_st_close(src);
    remove_tree(d);
}
END_TEST

START_TEST(test_writer_writes_strided_views_in_c_order)
{
    tl_scope_push();
    tl_tensor *x = tl_from_f32((const float[]){1, 2, 3, 4, 5, 6}, TL_SHAPE(2, 3));
    tl_tensor *xt = tl_transpose(x, 0, 1);   /* [3, 2]: 1 4 2 5 3 6 */
    tl_assert_ok(xt);
    ck_assert(!tl_is_contiguous(xt));
    char *d = temp_dir();
    const char *out = in_dir(d, "t.safetensors");
    tl_named_tensor item = {"t", xt, false};
    tl_state_dict sd = {&item, 1};
    ck_assert_int_eq(tl_st_save(out, &sd, -1, NULL, NULL, 0), 0);
    tl_st_file *f = tl_st_open(out);
    tl_assert_ok(f);
    tl_tensor *back = tl_st_tensor(f, &f->entries[0], TL_F32);
    const float want[] = {1, 4, 2, 5, 3, 6};
    ck_assert_int_eq(back->shape[0], 3);
    ck_assert(memcmp(tl_f32(back), want, sizeof want) == 0);
    tl_tensor_free(back);
    tl_st_close(f);
    remove_tree(d);
    tl_scope_pop();
}
END_TEST

START_TEST(test_writer_skips_shared_slots)
{
    tl_tensor *w = tl_tensor_new_owned(TL_F32, TL_SHAPE(4, 2));
    tl_named_tensor items[] = {{"model.embed_tokens.weight", w, false},
                               {"lm_head.weight", w, true}};
    tl_state_dict sd = {items, 2};
    char *d = temp_dir();
    const char *out = in_dir(d, "tied.safetensors");
    ck_assert_int_eq(tl_st_save(out, &sd, -1, NULL, NULL, 0), 0);
    tl_st_file *f = tl_st_open(out);
    tl_assert_ok(f);
    ck_assert_int_eq(f->count, 1);
    ck_assert_str_eq(f->entries[0].name, "model.embed_tokens.weight");
    ck_assert_uint_eq(f->map_size, f->data_start + 32);
    tl_st_close(f);
    tl_tensor_free(w);
    remove_tree(d);
}
END_TEST

START_TEST(test_writer_metadata_pairs_and_format)
{
    tl_tensor *w = tl_tensor_new_owned(TL_F32, TL_SHAPE(1));
    tl_named_tensor item = {"w", w, false};
    tl_state_dict sd = {&item, 1};
    char *d = temp_dir();
    const char *out = in_dir(d, "m.safetensors");
    const char *keys[] = {"step", "note"}, *values[] = {"12", "a \"quoted\"\nline"};
    ck_assert_int_eq(tl_st_save(out, &sd, -1, keys, values, 2), 0);
    tl_st_file *f = tl_st_open(out);
    tl_assert_ok(f);
    ck_assert_int_eq(f->meta_count, 3);
    ck_assert_str_eq(f->meta_keys[0], "format");
    ck_assert_str_eq(f->meta_values[0], "pt");
    ck_assert_str_eq(f->meta_values[1], "12");
    ck_assert_str_eq(f->meta_values[2], "a \"quoted\"\nline");
    tl_st_close(f);
    const char *fk[] = {"format"}, *fv[] = {"np"};
    ck_assert_int_eq(tl_st_save(out, &sd, -1, fk, fv, 1), 0);
    f = tl_st_open(out);
    tl_assert_ok(f);
    ck_assert_int_eq(f->meta_count, 1);
    ck_assert_str_eq(f->meta_values[0], "np");
    tl_st_close(f);
    tl_tensor_free(w);
    remove_tree(d);
}
END_TEST

START_TEST(test_writer_rejects_bad_arguments)
{
    tl_tensor *w = tl_tensor_new_owned(TL_F32, TL_SHAPE(1));
    tl_named_tensor items[] = {{"w", w, false}, {"w", w, false}};
    tl_state_dict dup = {items, 2}, one = {items, 1};
    char *d = temp_dir();
    const char *out = in_dir(d, "bad.safetensors");
    tl_clear_error();
    ck_assert_int_eq(tl_st_save(out, &dup, -1, NULL, NULL, 0), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "names \"w\" twice"));
    tl_clear_error();
    ck_assert_int_eq(tl_st_save(out, &one, TL_I64, NULL, NULL, 0), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "use TL_F32, TL_BF16, or -1"));
    tl_clear_error();
    const char *keys[] = {"k", "k"}, *values[] = {"1", "2"};
    ck_assert_int_eq(tl_st_save(out, &one, -1, keys, values, 2), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "metadata key \"k\" given twice"));
    tl_clear_error();
    ck_assert(!file_exists(out) && !temp_left(d, "bad.safetensors"));
    tl_tensor_free(w);
    remove_tree(d);
}
END_TEST

START_TEST(test_failed_save_leaves_no_file_under_the_final_name)
{
    tl_tensor *w = tl_tensor_new_owned(TL_F32, TL_SHAPE(1));
    tl_named_tensor item = {"w", w, false};
    tl_state_dict sd = {&item, 1};
    char *d = temp_dir();
    /* The final name is a folder: writing the temporary file works, the
     * rename fails, and neither name may be left holding a file. */
    const char *target = in_dir(d, "taken");
    ck_assert_int_eq(mkdir(target, 0755), 0);
    tl_clear_error();
    ck_assert_int_eq(tl_st_save(target, &sd, -1, NULL, NULL, 0), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "cannot rename"));
    tl_clear_error();
    ck_assert(!temp_left(d, "taken"));
    /* A folder that does not exist: nothing is created. */
    const char *nowhere = in_dir(d, "missing/w.safetensors");
    ck_assert_int_eq(tl_st_save(nowhere, &sd, -1, NULL, NULL, 0), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "does the folder exist"));
    tl_clear_error();
    tl_tensor_free(w);
    remove_tree(d);
}
END_TEST

/* ---- robustness ---------------------------------------------------------------- */

/* Reads every element of every tensor, so ASan or valgrind sees any read
 * outside the map. */
static double touch_all(const tl_st_file *f) {
    double sum = 0;
    for (int i = 0; i < f->count; i++) {
        const tl_st_entry *e = &f->entries[i];
        tl_dtype want = e->dtype == TL_ST_I64 ? TL_I64 : e->dtype == TL_ST_I32 ? TL_I32
                      : e->dtype == TL_ST_BOOL ? TL_BOOL : TL_F32;
        tl_tensor *t = tl_st_tensor(f, e, want);
        if (!t) {
            tl_clear_error();
            continue;
        }
        int64_t n = tl_numel(t);
        for (int64_t k = 0; k < n; k++) {
            double v = tl_item_at(t, k);
            if (v == v) sum += v;
        }
        tl_tensor_free(t);
    }
    return sum;
}

START_TEST(test_random_mutations_never_crash_the_reader)
{
    size_t n;
    unsigned char *orig = read_all(fixture("core/st_golden.safetensors"), &n);
    unsigned char *buf = calloc(n + 64, 1);   /* an extension reads as zeros */
    char *d = temp_dir();
    const char *p = in_dir(d, "mutant.safetensors");
    uint64_t s = 20240606;
    int opened = 0, rejected = 0;
    for (int round = 0; round < 400; round++) {
        memcpy(buf, orig, n);
        size_t len = n;
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        int kind = (int)(s % 4);
        int edits = 1 + (int)((s >> 8) % 4);
        for (int k = 0; k < edits; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            /* most edits land in the 8-byte length and the header */
            size_t at = kind == 0 ? (size_t)(s >> 16) % 8 : (size_t)(s >> 16) % len;
            buf[at] = kind == 1 ? (unsigned char)"{}[]\",:0123456789-. e"[(s >> 40) % 21]
                                : (unsigned char)(s >> 40);
        }
        if (kind == 3) len = (size_t)(s >> 24) % (n + 16);   /* truncate or extend */
        write_bytes(p, buf, len);
        tl_clear_error();
        tl_st_file *f = tl_st_open(p);
        if (f) {
            opened++;
            touch_all(f);
            tl_st_close(f);
        } else {
            rejected++;
            ck_assert_msg(tl_error() && strstr(tl_error(), p), "a rejection must say why");
        }
    }
    tl_clear_error();
    ck_assert_int_eq(opened + rejected, 400);
    ck_assert_int_gt(rejected, 100);
    ck_assert_int_gt(opened, 0);   /* edits in the data keep a valid file: tensors get read */
    free(buf);
    free(orig);
    remove_tree(d);
}
END_TEST
