/* output.c: checking a file a verb will write at its end (output.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinyllm/files.h"
#include "tinyllm/tensor.h"
#include "output.h"

int output_path_check(const char *option, const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return tl_fail_status("%s %s is a folder; give the file to write, e.g. %s/%s", option,
                              path, path, strcmp(option, "--json") == 0 ? "report.json"
                                                                        : "logits.safetensors");
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
