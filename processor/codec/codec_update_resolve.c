/* codec_update_resolve.c — Updates written with another version of the
 * Update schema (codec.h, "writer schemas of Update").
 *
 * avro-c 1.11 cannot resolve a writer schema against a reader that adds a
 * field with a default, so the resolution is done here, in two halves:
 *   add:    compare the writer's record with the reader's field by field
 *           once per schema id and keep a map reader field -> writer field
 *           (or "absent: take the default");
 *   decode: check the body against the *writer* schema (avro_check.h: the
 *           same guard the own schema gets), read it into a generic value
 *           of the writer's schema, and write the reader's encoding into
 *           the caller's store — each mapped field's own encoding (its
 *           type is the reader's), null for each absent one; the direct
 *           decoder (codec_update_decode.c, the caller) then reads it, so
 *           every Update rule applies unchanged.
 * The extra read through avro-c and the encode are paid only by messages
 * of producers that are not on dpstream's own schema (not measured). */
#include "codec/codec_internal.h"
#include "codec/avro_check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"

/* Cache bound: one entry per distinct id seen.  A producer stream of
 * random ids could otherwise grow it without end; past the bound the cache
 * starts over (entries are pure functions of the id, so re-adding one
 * decides the same way). */
#define MAX_WRITERS 256

struct dpc_writer {
    uint32_t            id;
    int                 compatible;
    char               *why;        /* !compatible: the reason */
    avro_schema_t       schema;
    avro_value_iface_t *iface;
    avro_value_t        val;
    int                 has_val;
    int                 map[UPD_NFIELDS];   /* writer field index, -1: absent (default null) */
};

static void writer_free(dpc_writer *w)
{
    if (!w)
        return;
    if (w->has_val)
        avro_value_decref(&w->val);
    if (w->iface)
        avro_value_iface_decref(w->iface);
    if (w->schema)
        avro_schema_decref(w->schema);
    free(w->why);
    free(w);
}

void dpc_writers_free(dp_codec *c)
{
    for (size_t i = 0; i < c->n_writers; i++)
        writer_free(c->writers[i]);
    free(c->writers);
    c->writers = NULL;
    c->n_writers = 0;
}

static dpc_writer *writer_find(const dp_codec *c, uint32_t id)
{
    for (size_t i = 0; i < c->n_writers; i++)
        if (c->writers[i]->id == id)
            return c->writers[i];
    return NULL;
}

int dp_codec_framed_id(const void *data, size_t len, uint32_t *id)
{
    const uint8_t *p = data;
    if (!p || len < DP_CODEC_CONFLUENT_HEADER || p[0] != 0)
        return DP_EINVAL;
    *id = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    return DP_OK;
}

int dp_codec_update_writer_known(const dp_codec *c, uint32_t id)
{
    return id == c->schema_id[DP_CODEC_UPDATE] || writer_find(c, id) != NULL;
}

/* Why the writer cannot be read (NULL: it can), filling w->map.  `why`
 * is scratch for the sentence. */
static const char *resolve_fields(const dp_codec *c, dpc_writer *w, char *why, size_t why_size)
{
    avro_schema_t rs = c->slot[DP_CODEC_UPDATE].schema, ws = w->schema;
    if (!is_avro_record(ws))
        return "it is not a record schema";
    const char *name = avro_schema_name(ws);
    if (!name || strcmp(name, "Update") != 0) {
        snprintf(why, why_size, "its record is named \"%s\", not Update", name ? name : "");
        return why;
    }
    for (int i = 0; i < UPD_NFIELDS; i++) {
        const char *field = avro_schema_record_field_name(rs, i);   /* the order codec.c checked */
        int wi = avro_schema_record_field_get_index(ws, field);
        if (wi < 0) {
            /* Only the optional fields have a default (null) in Update.avsc. */
            if (i == UPD_ENTITY || i == UPD_PAYLOAD || i == UPD_EVENT_TIME) {
                w->map[i] = -1;
                continue;
            }
            snprintf(why, why_size, "it lacks the field \"%s\", which has no default", field);
            return why;
        }
        avro_schema_t wf = avro_schema_record_field_get_by_index(ws, wi);
        avro_schema_t rf = avro_schema_record_field_get_by_index(rs, i);
        if (!avro_schema_equal(wf, rf)) {
            snprintf(why, why_size, "its field \"%s\" has another type than dpstream's Update", field);
            return why;
        }
        w->map[i] = wi;
    }
    return NULL;
}

static int writer_add(dp_codec *c, dpc_writer *w)
{
    if (c->n_writers == MAX_WRITERS) {
        for (size_t i = 0; i < c->n_writers; i++)
            writer_free(c->writers[i]);
        c->n_writers = 0;
    }
    if (!c->writers) {
        c->writers = calloc(MAX_WRITERS, sizeof *c->writers);
        if (!c->writers)
            return DP_ENOMEM;
    }
    c->writers[c->n_writers++] = w;
    return DP_OK;
}

int dp_codec_add_update_writer(dp_codec *c, uint32_t id, const char *schema_json,
                               char *errstr, size_t errstr_size)
{
    if (dp_codec_update_writer_known(c, id))
        return DP_OK;
    dpc_writer *w = calloc(1, sizeof *w);
    if (!w)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "codec: out of memory");
    w->id = id;
    char why[256];
    const char *bad = NULL;
    if (!schema_json)
        bad = "the schema registry has no schema with that id";
    else if (avro_schema_from_json_length(schema_json, strlen(schema_json), &w->schema) != 0) {
        w->schema = NULL;
        snprintf(why, sizeof why, "it does not parse as an Avro schema: %s", avro_strerror());
        bad = why;
    } else
        bad = resolve_fields(c, w, why, sizeof why);
    if (!bad) {
        w->iface = avro_generic_class_from_schema(w->schema);
        if (!w->iface || avro_generic_value_new(w->iface, &w->val) != 0) {
            writer_free(w);
            return dp_err(errstr, errstr_size, DP_ENOMEM, "codec: value for writer schema id %u: %s", id,
                          avro_strerror());
        }
        w->has_val = 1;
        w->compatible = 1;
    } else if (!(w->why = strdup(bad))) {
        writer_free(w);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "codec: out of memory");
    }
    if (writer_add(c, w) != DP_OK) {
        writer_free(w);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "codec: out of memory");
    }
    if (!w->compatible)
        return dp_err(errstr, errstr_size, DP_ESCHEMA, "Update: writer schema id %u cannot be read as dpstream's Update: %s",
                      id, w->why);
    return DP_OK;
}

/* The reader's encoding, field by field: a mapped field's value has the
 * reader's type, so its own binary encoding is the reader's; an absent
 * field is null, union branch 0 (one zero byte).  n: bytes needed, then
 * (out != NULL) written to out. */
static int encode_resolved(dp_codec *c, dpc_writer *w, uint8_t *out, size_t *n)
{
    size_t total = 0;
    if (out)
        avro_writer_memory_set_dest(c->writer, (char *)out, (int64_t)*n);
    for (int i = 0; i < UPD_NFIELDS; i++) {
        if (w->map[i] < 0) {
            static const char null_branch = 0;
            if (out && avro_write(c->writer, (void *)&null_branch, 1) != 0)
                return DP_EINVAL;
            total += 1;
            continue;
        }
        avro_value_t src;
        size_t k = 0;
        if (avro_value_get_by_index(&w->val, (size_t)w->map[i], &src, NULL) != 0 || avro_value_sizeof(&src, &k) != 0)
            return DP_EINVAL;
        if (out && avro_value_write(c->writer, &src) != 0)
            return DP_EINVAL;
        total += k;
    }
    *n = total;
    return DP_OK;
}

int dpc_resolve_update(dp_codec *c, uint32_t id, const uint8_t *body, size_t len, dp_update_store *store,
                       size_t *out_len, char *errstr, size_t errstr_size)
{
    dpc_writer *w = writer_find(c, id);
    if (!w)
        return dp_err(errstr, errstr_size, DP_ENOTFOUND, "Update: writer schema id %u is not known yet", id);
    if (!w->compatible)
        return dp_err(errstr, errstr_size, DP_ESCHEMA, "Update: writer schema id %u cannot be read as dpstream's Update: %s",
                      id, w->why);
    char why[192];
    if (dp_avro_check(w->schema, body, len, why, sizeof why) != DP_OK)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Update (writer schema id %u): %s", id, why);
    static const char empty[1];
    avro_reader_memory_set_source(c->reader, len ? (const char *)body : empty, (int64_t)len);
    if (avro_value_read(c->reader, &w->val) != 0) {
        int oom = errno == ENOMEM;
        avro_value_reset(&w->val);
        return dp_err(errstr, errstr_size, oom ? DP_ENOMEM : DP_EINVAL, "Update (writer schema id %u): avro read: %s",
                      id, avro_strerror());
    }
    size_t n = 0;
    int rc = encode_resolved(c, w, NULL, &n);
    if (rc == DP_OK) {
        dp_vec v = {store->bytes, store->bytes_cap};
        rc = dp_vec_reserve(&v, n ? n : 1, 1);
        store->bytes = v.p;
        store->bytes_cap = v.cap;
    }
    if (rc == DP_OK)
        rc = encode_resolved(c, w, store->bytes, &n);
    avro_value_reset(&w->val);
    if (rc != DP_OK)
        return dp_err(errstr, errstr_size, rc, "Update (writer schema id %u): resolving into dpstream's schema: %s", id,
                      rc == DP_ENOMEM ? "out of memory" : avro_strerror());
    *out_len = n;
    return DP_OK;
}
