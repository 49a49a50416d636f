/* state_disk.c — see state_disk.h. */
#include "state_disk.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *bench_broker_data_dir(void)
{
    static char dir[4096];
    const char *base = getenv("DPSTREAM_KAFKA_DIR");
    snprintf(dir, sizeof dir, "%s/data", base && *base ? base : "/tmp/dpstream-kafka");
    return dir;
}

/* 1 if name is "<topic>-<digits>" */
static int is_partition_dir(const char *name, const char *topic)
{
    size_t n = strlen(topic);
    if (strncmp(name, topic, n) != 0 || name[n] != '-' || !name[n + 1])
        return 0;
    for (const char *c = name + n + 1; *c; c++)
        if (*c < '0' || *c > '9')
            return 0;
    return 1;
}

int64_t bench_topic_disk_bytes(const char *data_dir, const char *topic)
{
    DIR *d = opendir(data_dir);
    if (!d)
        return -1;
    int64_t total = 0;
    int found = 0;
    struct dirent *e;
    char path[8192];
    while ((e = readdir(d))) {
        if (!is_partition_dir(e->d_name, topic))
            continue;
        found = 1;
        snprintf(path, sizeof path, "%s/%s", data_dir, e->d_name);
        DIR *pd = opendir(path);
        if (!pd)
            continue;
        struct dirent *f;
        while ((f = readdir(pd))) {
            size_t l = strlen(f->d_name);
            struct stat st;
            if (l < 5 || strcmp(f->d_name + l - 4, ".log") != 0)
                continue;
            snprintf(path, sizeof path, "%s/%s/%s", data_dir, e->d_name, f->d_name);
            if (stat(path, &st) == 0)
                total += (int64_t)st.st_size;
        }
        closedir(pd);
    }
    closedir(d);
    return found ? total : -1;
}
