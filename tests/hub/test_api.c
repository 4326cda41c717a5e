/* The metadata API (hub.h, "The metadata API"): repo info, tree listings
 * with Link pagination, paths-info and their errors, with the fields
 * huggingface_hub and @huggingface/hub read. Hashes, sizes and LFS pointers
 * are computed here, independently of the hub. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "client.h"

#define NESTED_SIZE 6000

/* org/tiny plus nested folders and a 0-byte file; a dataset; a private, a
 * gated repo and a ref. Page size `page` (0: the default). */
static hub *start_api_hub(int page, unsigned char **model) {
    hub *h = hub_new();
    ck_assert_ptr_nonnull(h);
    unsigned char *m = test_bytes(MODEL_SIZE, 7);
    ck_assert_int_eq(hub_add_file(h, "org/tiny", "config.json", CONFIG_JSON,
                                  strlen(CONFIG_JSON)), 0);
    ck_assert_int_eq(hub_add_file(h, "org/tiny", "model.safetensors", m, MODEL_SIZE), 0);
    ck_assert_int_eq(hub_add_file(h, "org/tiny", "empty.txt", "", 0), 0);
    ck_assert_int_eq(hub_add_file(h, "org/tiny", "a/b/c.txt", "c", 1), 0);
    ck_assert_int_eq(hub_add_file(h, "org/tiny", "a/d.txt", "d", 1), 0);
    ck_assert_int_eq(hub_add_ref(h, "org/tiny", "refs/pr/1"), 0);
    ck_assert_int_eq(hub_add_file(h, "datasets/org/data", "train.csv", "x,y\n", 4), 0);
    ck_assert_int_eq(hub_add_file(h, "org/private", "a.txt", "P", 1), 0);
    ck_assert_int_eq(hub_set_private(h, "org/private", "hf_owner"), 0);
    ck_assert_int_eq(hub_add_file(h, "org/gated", "a.txt", "G", 1), 0);
    ck_assert_int_eq(hub_set_gated(h, "org/gated", "hf_ok"), 0);
    hub_set_lfs_threshold(h, LFS_THRESHOLD);
    if (page) hub_set_tree_page_size(h, page);
    ck_assert_msg(hub_start(h, NULL) == 0, "hub_start: %s", hub_error(h));
    if (model) *model = m;
    else free(m);
    return h;
}

/* GET (or POST body, form when `form`) at endpoint + path: the status, and
 * the parsed JSON in *json (NULL when the body is not JSON). */
static long api_get(hub *h, const char *path, const char *token, cJSON **json,
                    http_reply **keep) {
    http_reply *r = http_fetch(urlf("%s%s", hub_endpoint(h), path), &(http_opts){.token = token});
    char *text = malloc(r->body_len + 1);
    memcpy(text, r->body, r->body_len);
    text[r->body_len] = 0;
    *json = cJSON_Parse(text);
    free(text);
    long status = r->status;
    if (keep) *keep = r;
    else http_reply_free(r);
    return status;
}

static const char *str(const cJSON *o, const char *key) {
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsNumber(v), "%s is not a number", key);
    return v->valuedouble;
}

/* The git blob sha1 of the LFS pointer git stores for data (git-lfs spec). */
static void pointer_sha1(const void *data, size_t n, char out[41], size_t *size) {
    char sha[65], text[200];
    test_sha256_hex(data, n, sha);
    int len = snprintf(text, sizeof text,
                       "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %zu\n",
                       sha, n);
    *size = (size_t)len;
    test_blob_sha1_hex(text, (size_t)len, out);
}

START_TEST(test_model_info_has_the_fields_clients_read) {
    unsigned char *m;
    hub *h = start_api_hub(0, &m);
    const char *commit = hub_commit(h, "org/tiny", "main");
    const char *paths[] = {"/api/models/org/tiny", "/api/models/org/tiny/revision/main",
                           "/api/models/org/tiny/revision/HEAD"};
    for (int k = 0; k < 3; k++) {
        cJSON *j;
        ck_assert_int_eq(api_get(h, paths[k], NULL, &j, NULL), 200);
        ck_assert_str_eq(str(j, "id"), "org/tiny");
        ck_assert_str_eq(str(j, "author"), "org");
        ck_assert_msg(str(j, "sha") && !strcmp(str(j, "sha"), commit), "%s: sha", paths[k]);
        ck_assert_uint_eq(strlen(str(j, "_id")), 24);
        ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "private")));
        ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "gated")));
        const char *when = str(j, "lastModified");
        ck_assert_msg(when && strlen(when) == 24 && when[10] == 'T' && when[23] == 'Z', "%s", when);
        const cJSON *sib = cJSON_GetObjectItem(j, "siblings"), *s;
        ck_assert_int_eq(cJSON_GetArraySize(sib), 5);
        int seen = 0;
        cJSON_ArrayForEach(s, sib) {
            seen += !strcmp(str(s, "rfilename"), "a/b/c.txt") + !strcmp(str(s, "rfilename"),
                                                                        "empty.txt");
            ck_assert_ptr_null(cJSON_GetObjectItem(s, "size"));   /* only with blobs=true */
        }
        ck_assert_int_eq(seen, 2);
        cJSON_Delete(j);
    }
    /* a revision by commit, and refs/pr/1 percent-encoded */
    cJSON *j;
    ck_assert_int_eq(api_get(h, urlf("/api/models/org/tiny/revision/%s", commit), NULL, &j, NULL),
                     200);
    ck_assert_str_eq(str(j, "sha"), commit);
    cJSON_Delete(j);
    ck_assert_int_eq(api_get(h, "/api/models/org/tiny/revision/refs%2Fpr%2F1", NULL, &j, NULL),
                     200);
    ck_assert_str_eq(str(j, "sha"), hub_commit(h, "org/tiny", "refs/pr/1"));
    cJSON_Delete(j);

    /* blobs=true: sizes, blob ids and LFS pointers */
    ck_assert_int_eq(api_get(h, "/api/models/org/tiny?blobs=true", NULL, &j, NULL), 200);
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "siblings")) {
        const char *name = str(s, "rfilename");
        char want[41], sha[65];
        size_t psize;
        if (!strcmp(name, "model.safetensors")) {
            pointer_sha1(m, MODEL_SIZE, want, &psize);
            const cJSON *lfs = cJSON_GetObjectItem(s, "lfs");
            test_sha256_hex(m, MODEL_SIZE, sha);
            ck_assert_str_eq(str(lfs, "sha256"), sha);
            ck_assert_int_eq((long)num(lfs, "size"), MODEL_SIZE);
            ck_assert_int_eq((long)num(lfs, "pointerSize"), (long)psize);
            ck_assert_int_eq((long)num(s, "size"), MODEL_SIZE);
        } else if (!strcmp(name, "config.json")) {
            test_blob_sha1_hex(CONFIG_JSON, strlen(CONFIG_JSON), want);
            ck_assert_ptr_null(cJSON_GetObjectItem(s, "lfs"));
        } else {
            continue;
        }
        ck_assert_str_eq(str(s, "blobId"), want);
    }
    cJSON_Delete(j);
    free(m);
    hub_free(h);
}
END_TEST

START_TEST(test_expand_returns_the_fields_asked_for) {
    hub *h = start_api_hub(0, NULL);
    cJSON *j;
    ck_assert_int_eq(api_get(h, "/api/models/org/tiny?expand=sha&expand=private", NULL, &j, NULL),
                     200);
    ck_assert_int_eq(cJSON_GetArraySize(j), 4);   /* _id, id and the two */
    ck_assert_ptr_nonnull(str(j, "sha"));
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(j, "private"));
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "siblings"));
    cJSON_Delete(j);
    /* @huggingface/hub's modelInfo asks for pipeline_tag, which a repo
     * without one leaves out */
    ck_assert_int_eq(api_get(h, "/api/models/org/tiny/revision/HEAD?expand=pipeline_tag"
                                "&expand=gated&expand=lastModified", NULL, &j, NULL), 200);
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "pipeline_tag"));
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(j, "gated"));
    cJSON_Delete(j);
    ck_assert_int_eq(api_get(h, "/api/models/org/tiny?expand=frobnicate", NULL, &j, NULL), 400);
    ck_assert_msg(str(j, "error") && strstr(str(j, "error"), "frobnicate"), "no error message");
    cJSON_Delete(j);
    hub_free(h);
}
END_TEST

/* The paths of a listing, in order, '\n'-separated; entries checked. */
static char *paths_of(const cJSON *arr, hub *h, const unsigned char *m) {
    char *out = calloc(1, 4096);
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        const char *type = str(e, "type"), *path = str(e, "path"), *oid = str(e, "oid");
        ck_assert_msg(type && path && oid && strlen(oid) == 40, "an entry lacks type/path/oid");
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "size")));
        if (!strcmp(path, "model.safetensors")) {
            char want[41], sha[65];
            size_t psize;
            pointer_sha1(m, MODEL_SIZE, want, &psize);
            test_sha256_hex(m, MODEL_SIZE, sha);
            ck_assert_str_eq(oid, want);
            ck_assert_str_eq(str(cJSON_GetObjectItem(e, "lfs"), "oid"), sha);
        }
        if (!strcmp(path, "empty.txt")) {
            /* git's empty blob */
            ck_assert_str_eq(oid, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
            ck_assert_int_eq((long)num(e, "size"), 0);
        }
        (void)h;
        strcat(out, !strcmp(type, "directory") ? "d " : "f ");
        strcat(out, path);
        strcat(out, "\n");
    }
    return out;
}

START_TEST(test_tree_lists_folders_and_files) {
    unsigned char *m;
    hub *h = start_api_hub(0, &m);
    cJSON *j;
    ck_assert_int_eq(api_get(h, "/api/models/org/tiny/tree/main", NULL, &j, NULL), 200);
    char *got = paths_of(j, h, m);
    ck_assert_str_eq(got, "d a\nf config.json\nf empty.txt\nf model.safetensors\n");
    free(got);
    cJSON_Delete(j);

    ck_assert_int_eq(api_get(h, "/api/models/org/tiny/tree/main?recursive=true&expand=false",
                             NULL, &j, NULL), 200);
    got = paths_of(j, h, m);
    ck_assert_str_eq(got, "d a\nd a/b\nf a/b/c.txt\nf a/d.txt\nf config.json\nf empty.txt\n"
                          "f model.safetensors\n");
    free(got);
    cJSON_Delete(j);

    /* a folder, as "a/b" and as huggingface_hub sends it, "a%2Fb" */
    const char *sub[] = {"/api/models/org/tiny/tree/main/a/b",
                         "/api/models/org/tiny/tree/main/a%2Fb",
                         "/api/models/org/tiny/tree/refs%2Fpr%2F1/a/b",
                         "/api/models/org/tiny/tree/refs/pr/1/a/b"};
    for (int k = 0; k < 4; k++) {
        ck_assert_int_eq(api_get(h, sub[k], NULL, &j, NULL), 200);
        got = paths_of(j, h, m);
        ck_assert_msg(!strcmp(got, "f a/b/c.txt\n"), "%s: %s", sub[k], got);
        free(got);
        cJSON_Delete(j);
    }
    /* expand=true adds the last commit */
    ck_assert_int_eq(api_get(h, "/api/models/org/tiny/tree/main/a?expand=true", NULL, &j, NULL),
                     200);
    const cJSON *lc = cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "lastCommit");
    ck_assert_str_eq(str(lc, "id"), hub_commit(h, "org/tiny", "main"));
    cJSON_Delete(j);

    /* not a folder: EntryNotFound */
    const char *bad[] = {"/api/models/org/tiny/tree/main/nope",
                         "/api/models/org/tiny/tree/main/config.json"};
    for (int k = 0; k < 2; k++) {
        http_reply *r;
        ck_assert_int_eq(api_get(h, bad[k], NULL, &j, &r), 404);
        ck_assert_str_eq(http_header(r, "X-Error-Code"), "EntryNotFound");
        http_reply_free(r);
        cJSON_Delete(j);
    }
    free(m);
    hub_free(h);
}
END_TEST

/* A long listing comes in pages, each naming the next by an absolute URL in
 * Link: rel="next"; following them gives every entry once. */
START_TEST(test_tree_pages_follow_the_link_header) {
    unsigned char *m;
    hub *h = start_api_hub(2, &m);
    char *url = strdup(urlf("%s/api/models/org/tiny/tree/main?recursive=true", hub_endpoint(h)));
    char all[4096] = "";
    int pages = 0;
    while (url) {
        http_reply *r = http_fetch(url, &(http_opts){0});
        ck_assert_int_eq(r->status, 200);
        char *text = strndup((const char *)r->body, r->body_len);
        cJSON *j = cJSON_Parse(text);
        free(text);
        ck_assert_int_le(cJSON_GetArraySize(j), 2);
        char *got = paths_of(j, h, m);
        strcat(all, got);
        free(got);
        cJSON_Delete(j);
        free(url);
        url = NULL;
        const char *link = http_header(r, "Link");
        if (link) {
            ck_assert_msg(!strncmp(link, "<http://127.0.0.1:", 18) &&
                              strstr(link, ">; rel=\"next\"") &&
                              strstr(link, "recursive=true"),
                          "Link: %s", link);
            url = strndup(link + 1, (size_t)(strchr(link, '>') - link - 1));
        }
        http_reply_free(r);
        ck_assert_int_lt(++pages, 10);
    }
    ck_assert_int_eq(pages, 4);   /* 7 entries, 2 a page */
    ck_assert_str_eq(all, "d a\nd a/b\nf a/b/c.txt\nf a/d.txt\nf config.json\nf empty.txt\n"
                          "f model.safetensors\n");
    cJSON *j;
    ck_assert_int_eq(api_get(h, "/api/models/org/tiny/tree/main?cursor=zz", NULL, &j, NULL), 400);
    cJSON_Delete(j);
    free(m);
    hub_free(h);
}
END_TEST

static long post(hub *h, const char *path, const char *body, const char *type, cJSON **json) {
    CURL *c = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, type);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    long status = 0;
    curl_easy_setopt(c, CURLOPT_URL, urlf("%s%s", hub_endpoint(h), path));
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    fclose(out);
    *json = cJSON_Parse(text);
    free(text);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return status;
}

START_TEST(test_paths_info_as_json_and_as_a_form) {
    unsigned char *m;
    hub *h = start_api_hub(0, &m);
    cJSON *j;
    ck_assert_int_eq(post(h, "/api/models/org/tiny/paths-info/main",
                          "{\"paths\": [\"model.safetensors\", \"a\", \"nope\"], \"expand\": true}",
                          "Content-Type: application/json", &j), 200);
    char *got = paths_of(j, h, m);
    ck_assert_str_eq(got, "f model.safetensors\nd a\n");
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "lastCommit"));
    free(got);
    cJSON_Delete(j);
    ck_assert_int_eq(post(h, "/api/models/org/tiny/paths-info/main",
                          "paths=empty.txt&paths=a%2Fb%2Fc.txt&expand=False",
                          "Content-Type: application/x-www-form-urlencoded", &j), 200);
    got = paths_of(j, h, m);
    ck_assert_str_eq(got, "f empty.txt\nf a/b/c.txt\n");
    ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "lastCommit"));
    free(got);
    cJSON_Delete(j);
    ck_assert_int_eq(api_get(h, "/api/models/org/tiny/paths-info/main", NULL, &j, NULL), 405);
    cJSON_Delete(j);
    free(m);
    hub_free(h);
}
END_TEST

/* Status and X-Error-Code of an API GET. */
static void expect_api(hub *h, const char *path, const char *token, long status,
                       const char *code) {
    cJSON *j;
    http_reply *r;
    long got = api_get(h, path, token, &j, &r);
    const char *c = http_header(r, "X-Error-Code");
    ck_assert_msg(got == status, "%s (token %s): %ld, expected %ld", path, token ? token : "none",
                  got, status);
    if (code) ck_assert_msg(c && !strcmp(c, code), "%s: X-Error-Code %s, expected %s", path,
                            c ? c : "(none)", code);
    if (status == 200) ck_assert_ptr_nonnull(j);
    else ck_assert_msg(str(j, "error"), "%s: no {\"error\": ...} body", path);
    cJSON_Delete(j);
    http_reply_free(r);
}

START_TEST(test_api_errors_and_access) {
    hub *h = start_api_hub(0, NULL);
    expect_api(h, "/api/models/org/nothing", NULL, 401, "RepoNotFound");
    expect_api(h, "/api/models/org/nothing", "hf_any", 404, "RepoNotFound");
    expect_api(h, "/api/models/org/nothing/tree/main", NULL, 401, "RepoNotFound");
    expect_api(h, "/api/models/org/private", NULL, 401, "RepoNotFound");   /* not told apart */
    expect_api(h, "/api/models/org/private/tree/main", "hf_other", 404, "RepoNotFound");
    expect_api(h, "/api/models/org/private", "hf_owner", 200, NULL);
    expect_api(h, "/api/models/org/tiny/revision/v9", NULL, 404, "RevisionNotFound");
    expect_api(h, "/api/models/org/tiny/tree/v9", NULL, 404, "RevisionNotFound");
    /* a model, not a dataset, and the other way round */
    expect_api(h, "/api/datasets/org/tiny", NULL, 401, "RepoNotFound");
    expect_api(h, "/api/models/org/data", NULL, 401, "RepoNotFound");
    cJSON *j;
    ck_assert_int_eq(api_get(h, "/api/models/org/private", "hf_owner", &j, NULL), 200);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "private")));
    cJSON_Delete(j);
    /* a gated repo's metadata is public; its files are not */
    ck_assert_int_eq(api_get(h, "/api/models/org/gated", NULL, &j, NULL), 200);
    ck_assert_str_eq(str(j, "gated"), "manual");
    cJSON_Delete(j);
    ck_assert_int_eq(api_get(h, "/api/models/org/gated/tree/main", NULL, &j, NULL), 200);
    ck_assert_int_eq(cJSON_GetArraySize(j), 1);
    cJSON_Delete(j);
    /* datasets */
    ck_assert_int_eq(api_get(h, "/api/datasets/org/data/revision/main", NULL, &j, NULL), 200);
    ck_assert_str_eq(str(j, "id"), "org/data");
    ck_assert_str_eq(str(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "siblings"), 0), "rfilename"),
                     "train.csv");
    cJSON_Delete(j);
    ck_assert_int_eq(api_get(h, "/api/datasets/org/data/tree/main", NULL, &j, NULL), 200);
    ck_assert_str_eq(str(cJSON_GetArrayItem(j, 0), "path"), "train.csv");
    cJSON_Delete(j);
    hub_free(h);
}
END_TEST
