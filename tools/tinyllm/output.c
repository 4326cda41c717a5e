/* output.c: checking a file a verb will write at its end, and printing text
 * that came from a file clean (output.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinyllm/files.h"
#include "tinyllm/tensor.h"
#include "output.h"

/* The name of a file of dir that is the file st describes (the same inode,
 * links followed: a Hub cache's files are links to its blobs), or NULL. */
static char *same_file_in(const char *dir, const struct stat *st) {
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *e;
    char *name = NULL;
    while (d && !name && (e = readdir(d)) != NULL) {
        char full[4200];
        struct stat other;
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        if (stat(full, &other) == 0 && S_ISREG(other.st_mode) && other.st_dev == st->st_dev &&
            other.st_ino == st->st_ino)
            name = strdup(e->d_name);
    }
    if (d) closedir(d);
    return name;
}

int output_path_check(const char *option, const char *path, const char *checkpoint) {
    struct stat st, link;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return tl_fail_status("%s %s is a folder; give the file to write, e.g. %s/%s", option,
                              path, path, strcmp(option, "--json") == 0 ? "report.json"
                                                                        : "logits.safetensors");
    /* The file is written beside and renamed into place: that would put a
     * regular file where a device, a pipe or a link was. */
    if (lstat(path, &link) == 0 && S_ISLNK(link.st_mode))
        return tl_fail_status("%s %s is a symbolic link; tinyllm writes a new file and renames "
                              "it into place, which would replace the link: give the path it "
                              "leads to", option, path);
    if (lstat(path, &link) == 0 && !S_ISREG(link.st_mode))
        return tl_fail_status("%s %s is not a regular file (a device, a pipe or a socket); "
                              "give the path of a file to write", option, path);
    char *input = lstat(path, &link) == 0 ? same_file_in(checkpoint, &link) : NULL;
    if (input) {
        tl_fail("%s %s is %s of the checkpoint %s, which this run reads; give another path",
                option, path, input, checkpoint);
        free(input);
        return -1;
    }
    /* A file beside it, as the write at the end makes one. */
    char tmp[4200];
    FILE *f = tl_create_temp_beside(path, tmp, sizeof tmp);
    if (!f) {
        int err = errno;
        const char *slash = strrchr(path, '/');
        if (err == ENOENT && slash)
            return tl_fail_status("%s %s: the folder %.*s does not exist; create it or give "
                                  "another path", option, path, (int)(slash - path), path);
        return tl_fail_status("%s %s: cannot create a file beside it: %s; give a path in a "
                              "folder you can write to", option, path, strerror(err));
    }
    fclose(f);
    unlink(tmp);
    return 0;
}

int print_clean(FILE *out, const char *s) {
    int width = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8] = "";
        if (*p < 0x20 || *p == 0x7F) snprintf(esc, sizeof esc, "\\x%02x", *p);
        else if (*p == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F)
            snprintf(esc, sizeof esc, "\\u%04x", *++p);   /* C1 control, as UTF-8 */
        if (esc[0]) {
            if (out) fputs(esc, out);
            width += (int)strlen(esc);
        } else {
            if (out) fputc(*p, out);
            if ((*p & 0xC0) != 0x80) width++;   /* count characters, not bytes */
        }
    }
    return width;
}

void print_failure(const char *verb, const char *fallback) {
    fprintf(stderr, "tinyllm %s: ", verb);
    print_clean(stderr, tl_error() ? tl_error() : fallback ? fallback : "failed");
    fputc('\n', stderr);
}
