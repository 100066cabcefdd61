/* One table and its indexes written straight into SQLite's file format, in bulk.
 *
 * A compare's part file is ~70% tb_nodes: at 27k records a side, SQLite spent ~1.8 s of
 * CPU inserting its rows and keeping msprobe's seven indexes (and the primary key's) up to
 * date, more than any other stage, and at a million records a side about 90 s. Here the rows
 * arrive in rowid order and are packed into full table leaves as they come; each index's
 * keys are kept, sorted once at the end and packed bottom-up into B-trees. The result is
 * what SQLite itself would hold, but for page layout: the same records, the same key order,
 * and `PRAGMA integrity_check` verifies every index against the table.
 *
 * The format: https://www.sqlite.org/fileformat2.html (database header, B-tree pages,
 * record format, overflow pages). Pages get their numbers when they are written, and are
 * written in number order, so the file is one sequential stream; page 1 (the header and
 * sqlite_schema) is written last, in the space left for it.
 *
 * Index keys are kept in an order-preserving byte form, so sorting is memcmp: a tag per
 * value (NULL < integer < text, SQLite's order), integers as 8 big-endian bytes with the
 * sign bit flipped, text with 0x00 escaped as 00 FF and ended by 00 00 (BINARY collation:
 * bytes, then shorter first). Each key ends with the rowid, so keys are distinct. When the
 * pages are written, each key is turned back into a SQLite record.
 *
 * An index holds a few megabytes of keys in memory (``spill_bytes``), then sorts them and
 * moves them as one run to an unnamed file of its own beside the table's; at the end its runs
 * are merged, a buffer per run. At a million records a side the keys are ~2 GB, which the
 * process would otherwise hold until its last row.
 *
 * While rows are appended, the table's pages and the spilled runs are written by a thread of
 * the table's own ("writing behind"), so that the kernel's copying into the page cache runs
 * on the other core.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The tb_nodes layout this writer was made for: graphboard's store/node_rows.py states the one
 * it hands over (LAYOUT_VERSION: how NodesLayout, a row and a refusal look) and will not use a
 * writer built for another. Bump both together. */
#define LAYOUT_VERSION 2

#define MAX_COLUMNS 64
#define MAX_INDEXES 16
#define RUN_BYTES (1 << 20) /* a Writer's run of page numbers, and its buffer */

enum { TAG_NULL = 0x05, TAG_INT = 0x10, TAG_TEXT = 0x20 };
enum { LEAF_TABLE = 0x0D, INTERIOR_TABLE = 0x05, LEAF_INDEX = 0x0A, INTERIOR_INDEX = 0x02 };

/* ---- failures ------------------------------------------------------------------------
 * The indexes are built on several threads without the GIL, so the code they run cannot set
 * Python errors: it records what failed in its thread's ``failure`` and returns -1 (or page
 * 0), and the functions Python calls turn that into an exception (raise_failure). Code that
 * runs only with the GIL (reading rows) still raises directly. */

enum { FAIL_NONE, FAIL_MEMORY, FAIL_OS, FAIL_DUPLICATE };

struct Index;

typedef struct {
    int kind;
    int error;           /* FAIL_OS: errno, and what could not be done */
    const char *what;
    struct Index *index; /* FAIL_DUPLICATE: the index, and where the second key is */
    size_t at;
} Failure;

static _Thread_local Failure failure;

static int fail_memory(void) {
    failure.kind = FAIL_MEMORY;
    return -1;
}

static int fail_os(const char *what) {
    failure = (Failure){FAIL_OS, errno, what, NULL, 0};
    return -1;
}

/* ---- growable buffers ---------------------------------------------------------------- */

typedef struct {
    uint8_t *data;
    size_t size, capacity;
} Bytes;

static int bytes_reserve(Bytes *b, size_t extra) {
    if (b->size + extra <= b->capacity) return 0;
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->size + extra) capacity *= 2;
    uint8_t *data = realloc(b->data, capacity);
    if (data == NULL) return fail_memory();
    b->data = data;
    b->capacity = capacity;
    return 0;
}

static int bytes_append(Bytes *b, const void *src, size_t n) {
    if (n == 0) return 0; /* an empty buffer's data may be NULL, which memcpy may not take */
    if (bytes_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->size, src, n);
    b->size += n;
    return 0;
}

/* Room for one more item in a growable array of ``size``-byte items. */
static int grow(void **items, size_t *capacity, size_t count, size_t size) {
    if (count < *capacity) return 0;
    size_t more = *capacity ? *capacity * 2 : 256;
    void *bigger = realloc(*items, more * size);
    if (bigger == NULL) return fail_memory();
    *items = bigger;
    *capacity = more;
    return 0;
}

/* ---- SQLite's encodings ------------------------------------------------------------- */

static int varint_len(uint64_t v) {
    int n = 1;
    if (v > 0x00ffffffffffffffULL) return 9;
    while (v > 0x7f) {
        v >>= 7;
        n++;
    }
    return n;
}

static int put_varint(uint8_t *p, uint64_t v) {
    if (v > 0x00ffffffffffffffULL) { /* nine bytes: the last holds eight bits */
        p[8] = (uint8_t)v;
        v >>= 8;
        for (int i = 7; i >= 0; i--) {
            p[i] = (uint8_t)((v & 0x7f) | 0x80);
            v >>= 7;
        }
        return 9;
    }
    uint8_t tmp[9];
    int n = 0;
    do {
        tmp[n++] = (uint8_t)((v & 0x7f) | 0x80);
        v >>= 7;
    } while (v != 0);
    tmp[0] &= 0x7f;
    for (int i = 0; i < n; i++) p[i] = tmp[n - 1 - i];
    return n;
}

static void put_be(uint8_t *p, uint64_t v, int size) {
    for (int i = size - 1; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

/* Serial type and body size of an integer (0 and 1 take no body: file format 4). */
static int integer_type(int64_t v, int *size) {
    if (v == 0) { *size = 0; return 8; }
    if (v == 1) { *size = 0; return 9; }
    uint64_t u = v < 0 ? ~(uint64_t)v : (uint64_t)v;
    if (u <= 0x7f) { *size = 1; return 1; }
    if (u <= 0x7fff) { *size = 2; return 2; }
    if (u <= 0x7fffff) { *size = 3; return 3; }
    if (u <= 0x7fffffff) { *size = 4; return 4; }
    if (u <= 0x7fffffffffffULL) { *size = 6; return 5; }
    *size = 8;
    return 6;
}

/* A value of a row, as stored. */
typedef struct {
    int kind; /* 0 null, 1 integer, 2 real, 3 text */
    int64_t integer;
    double real;
    const char *text;
    Py_ssize_t length;
} Value;

static uint64_t value_serial_type(const Value *v, int *size) {
    switch (v->kind) {
    case 0: *size = 0; return 0;
    case 1: return (uint64_t)integer_type(v->integer, size);
    case 2: *size = 8; return 7;
    default: *size = (int)0; return (uint64_t)(2 * v->length + 13);
    }
}

static size_t value_body_size(const Value *v) {
    int size;
    value_serial_type(v, &size);
    return v->kind == 3 ? (size_t)v->length : (size_t)size;
}

static int header_length(size_t types_length) {
    int own = 1;
    while (varint_len(types_length + own) > own) own++;
    return (int)types_length + own;
}

/* The record of ``values`` appended to ``out``. */
static int encode_record(Bytes *out, const Value *values, int count) {
    size_t types_length = 0, body = 0;
    for (int i = 0; i < count; i++) {
        int size;
        types_length += varint_len(value_serial_type(&values[i], &size));
        body += value_body_size(&values[i]);
    }
    int header = header_length(types_length);
    if (bytes_reserve(out, header + body) < 0) return -1;
    uint8_t *p = out->data + out->size;
    p += put_varint(p, (uint64_t)header);
    for (int i = 0; i < count; i++) {
        int size;
        p += put_varint(p, value_serial_type(&values[i], &size));
    }
    for (int i = 0; i < count; i++) {
        const Value *v = &values[i];
        int size;
        value_serial_type(v, &size);
        if (v->kind == 1) {
            put_be(p, (uint64_t)v->integer, size);
            p += size;
        } else if (v->kind == 2) {
            uint64_t bits;
            memcpy(&bits, &v->real, 8);
            put_be(p, bits, 8);
            p += 8;
        } else if (v->kind == 3 && v->length > 0) { /* an empty key text may be NULL */
            memcpy(p, v->text, (size_t)v->length);
            p += v->length;
        }
    }
    out->size = (size_t)(p - out->data);
    return 0;
}

/* ---- index keys in sortable form ---------------------------------------------------- */

static int key_append_value(Bytes *key, const Value *v) {
    if (v->kind == 0) {
        uint8_t tag = TAG_NULL;
        return bytes_append(key, &tag, 1);
    }
    if (v->kind == 1) {
        uint8_t p[9];
        p[0] = TAG_INT;
        put_be(p + 1, (uint64_t)v->integer ^ 0x8000000000000000ULL, 8);
        return bytes_append(key, p, 9);
    }
    if (v->kind == 3) {
        if (bytes_reserve(key, 2 * (size_t)v->length + 3) < 0) return -1;
        uint8_t *p = key->data + key->size;
        *p++ = TAG_TEXT;
        const uint8_t *s = (const uint8_t *)v->text;
        const uint8_t *zero = memchr(s, 0, (size_t)v->length);
        if (zero == NULL) {
            memcpy(p, s, (size_t)v->length);
            p += v->length;
        } else {
            for (Py_ssize_t i = 0; i < v->length; i++) {
                *p++ = s[i];
                if (s[i] == 0) *p++ = 0xff;
            }
        }
        *p++ = 0;
        *p++ = 0;
        key->size = (size_t)(p - key->data);
        return 0;
    }
    PyErr_SetString(PyExc_TypeError, "an indexed column holds a real number, which this writer cannot sort");
    return -1;
}

/* Decode one value of a sortable key at ``p`` (which ends before ``end``); a text's bytes
 * are unescaped into ``scratch`` and ``text`` holds their offset there, as the scratch may
 * still move. */
static const uint8_t *key_read_value(const uint8_t *p, const uint8_t *end, Value *v, Bytes *scratch) {
    if (*p == TAG_NULL) {
        v->kind = 0;
        return p + 1;
    }
    if (*p == TAG_INT) {
        uint64_t u = 0;
        for (int i = 1; i <= 8; i++) u = (u << 8) | p[i];
        v->kind = 1;
        v->integer = (int64_t)(u ^ 0x8000000000000000ULL);
        return p + 9;
    }
    /* text */
    p++;
    size_t start = scratch->size;
    for (;;) {
        const uint8_t *zero = memchr(p, 0, (size_t)(end - p));
        if (bytes_append(scratch, p, (size_t)(zero - p)) < 0) return NULL;
        if (zero[1] == 0) {
            p = zero + 2;
            break;
        }
        uint8_t nul = 0;
        if (bytes_append(scratch, &nul, 1) < 0) return NULL;
        p = zero + 2;
    }
    v->kind = 3;
    v->text = (const char *)(uintptr_t)start;
    v->length = (Py_ssize_t)(scratch->size - start);
    return p;
}

typedef struct {
    uint64_t prefix; /* 8 bytes after the index's common prefix, big-endian */
    uint64_t offset;
    uint32_t length;
} KeyRef;

typedef struct {
    uint64_t offset, bytes; /* where in the spill file */
} Run;

typedef struct Index {
    int columns[MAX_COLUMNS];
    int column_count;
    int unique;
    Bytes keys;         /* the keys not yet spilled */
    size_t held;        /* how many keys that is */
    int spill_fd;       /* an unnamed file beside the table's, once keys are spilled; else -1 */
    uint64_t spilled;   /* bytes in it: runs of sorted keys, each key after its 4-byte length */
    Run *runs;
    size_t run_count, run_capacity;
    KeyRef *refs;       /* the held keys', made at finishing (and a duplicate's, to show) */
    size_t count;       /* keys in all */
} Index;

/* The keys being sorted: qsort_r's context (indexes are sorted on several threads). */
typedef struct {
    const uint8_t *base;
    size_t common;
} SortKeys;

static int compare_refs(const void *a, const void *b, void *context) {
    const KeyRef *x = a, *y = b;
    if (x->prefix != y->prefix) return x->prefix < y->prefix ? -1 : 1;
    const SortKeys *keys = context;
    size_t skip = keys->common + 8;
    size_t lx = x->length > skip ? x->length - skip : 0, ly = y->length > skip ? y->length - skip : 0;
    size_t n = lx < ly ? lx : ly;
    int c = n ? memcmp(keys->base + x->offset + skip, keys->base + y->offset + skip, n) : 0;
    if (c) return c;
    return lx < ly ? -1 : lx > ly;
}

/* The exception for a unique index's keys ``at - 1`` and ``at``, equal but for the rowid. */
static void raise_duplicate(Index *index, size_t at) {
    Bytes scratch = {0};
    Value v;
    const uint8_t *p = index->keys.data + index->refs[at].offset;
    PyObject *shown = NULL;
    if (key_read_value(p, p + index->refs[at].length, &v, &scratch) != NULL) {
        if (v.kind == 3)
            shown = PyUnicode_DecodeUTF8((const char *)scratch.data, v.length, "replace");
        else if (v.kind == 1)
            shown = PyLong_FromLongLong(v.integer);
    }
    free(scratch.data);
    if (shown == NULL) {
        PyErr_Clear();
        shown = Py_None;
        Py_INCREF(shown);
    }
    PyErr_Format(PyExc_ValueError, "two rows have the same unique key %R", shown);
    Py_DECREF(shown);
}

/* Raise what this thread's ``failure`` holds, unless an exception is set already. */
static void raise_failure(void) {
    Failure f = failure;
    failure.kind = FAIL_NONE;
    if (PyErr_Occurred()) return;
    switch (f.kind) {
    case FAIL_OS:
        PyErr_Format(PyExc_OSError, "cannot %s: %s", f.what, strerror(f.error));
        break;
    case FAIL_DUPLICATE:
        raise_duplicate(f.index, f.at);
        break;
    case FAIL_MEMORY:
        PyErr_NoMemory();
        break;
    default:
        PyErr_SetString(PyExc_SystemError, "_btree failed without saying why");
    }
}

/* ---- the builder ------------------------------------------------------------------------ */

typedef struct {
    uint32_t page;
    int64_t last; /* the largest rowid under it (table pages) */
} Child;

typedef struct {
    Child *items;
    size_t count, capacity;
} Children;

static int children_push(Children *c, uint32_t page, int64_t last) {
    if (grow((void **)&c->items, &c->capacity, c->count, sizeof(Child)) < 0) return -1;
    c->items[c->count].page = page;
    c->items[c->count].last = last;
    c->count++;
    return 0;
}

/* ---- page numbers and writes --------------------------------------------------------
 * A thread that writes pages has a Writer, which takes page numbers from the file's Pages in
 * runs, fills a buffer with the pages of its run and writes it at its place in the file. A
 * B-tree page only needs its children's numbers, and those are written first, so the pages
 * of indexes built at once may interleave. A writer done with its work gives back the rest
 * of its run if no run was taken after it; otherwise those pages stay unused, and finish
 * lists them on SQLite's freelist (SQLite fills them first when it writes the other
 * tables). One thread alone leaves none. */

typedef struct {
    int fd;
    uint32_t page_size;
    pthread_mutex_t lock;
    uint32_t next;    /* the first page number no writer has taken */
    uint32_t *unused; /* numbers taken and left unused */
    size_t unused_count, unused_capacity;
} Pages;

struct Behind;

typedef struct {
    Pages *pages;
    uint8_t *buffer; /* pages first .. first + count - 1, not yet written */
    uint32_t first, count;
    uint32_t end;  /* the run taken ends before this number */
    uint32_t size; /* pages per run: the buffer holds one run */
    struct Behind *behind; /* writes its runs behind (the table's writer), or NULL: itself */
} Writer;

static int writer_open(Writer *w, Pages *pages) {
    uint32_t size = RUN_BYTES / pages->page_size;
    *w = (Writer){pages, malloc((size_t)size * pages->page_size), 0, 0, 0, size, NULL};
    return w->buffer == NULL ? fail_memory() : 0;
}

/* Write ``size`` bytes at ``offset``, however many calls it takes; -1 with ``failure`` set. */
static int write_at(int fd, const uint8_t *data, size_t size, off_t offset, const char *what) {
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(fd, data + done, size - done, offset + (off_t)done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;
            return fail_os(what);
        }
        done += (size_t)n;
    }
    return 0;
}

/* ---- writing behind ----------------------------------------------------------------------
 * While rows are appended (on the caller's thread, with the GIL), each full run of table pages
 * and each spill of index keys is handed to a thread of the table's own, which sorts the keys
 * and writes both without the GIL. At a million records a side the kernel's copying of the
 * file into the page cache took much of the calling thread's time (bench/results/core.md); the
 * other core does it now, while Python formats the next rows. What is handed over has its
 * place in the file already, so the file is the same whenever the writes land. The first
 * failure is kept and raised by the next call from Python; what is queued after it is
 * dropped. */

typedef struct Job {
    struct Job *next;
    int fd;
    off_t offset;
    uint8_t *data; /* freed once written */
    size_t size;
    size_t keys;   /* a spill: ``data`` holds this many keys of ``columns`` values, to sort */
    int columns;
} Job;

#define BEHIND_BYTES (64u << 20) /* at most this much handed over and not yet written */

typedef struct Behind {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a job queued, or stop */
    pthread_cond_t done; /* a job done */
    pthread_t thread;
    int started, stop, failed;
    Failure failure; /* the first */
    Job *head, *tail;
    size_t pending; /* bytes queued or being written */
} Behind;

static KeyRef *refs_of(const Bytes *keys, size_t count, int column_count);
static void sort_refs(const uint8_t *base, KeyRef *refs, size_t count);

/* A spill's run: its keys sorted, each after its 4-byte length. */
static int write_run(const Job *job) {
    Bytes keys = {job->data, job->size, job->size};
    KeyRef *refs = refs_of(&keys, job->keys, job->columns);
    if (refs == NULL) return -1;
    sort_refs(job->data, refs, job->keys);
    Bytes run = {0};
    int failed = bytes_reserve(&run, job->size + 4 * job->keys) < 0;
    for (size_t i = 0; i < job->keys && !failed; i++) {
        put_be(run.data + run.size, refs[i].length, 4);
        memcpy(run.data + run.size + 4, job->data + refs[i].offset, refs[i].length);
        run.size += 4 + (size_t)refs[i].length;
    }
    if (!failed) failed = write_at(job->fd, run.data, run.size, job->offset, "write index keys");
    free(refs);
    free(run.data);
    return failed ? -1 : 0;
}

static void *behind_worker(void *context) {
    Behind *b = context;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while (b->head == NULL && !b->stop) pthread_cond_wait(&b->wake, &b->lock);
        Job *job = b->head;
        if (job == NULL) break; /* stopped, and nothing left */
        b->head = job->next;
        if (b->head == NULL) b->tail = NULL;
        int skip = b->failed;
        pthread_mutex_unlock(&b->lock);
        int failed = 0;
        if (!skip)
            failed = job->keys ? write_run(job) : write_at(job->fd, job->data, job->size, job->offset, "write");
        free(job->data);
        pthread_mutex_lock(&b->lock);
        if (failed && !b->failed) {
            b->failed = 1;
            b->failure = failure;
        }
        b->pending -= job->size;
        free(job);
        pthread_cond_broadcast(&b->done);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static int behind_init(Behind *b) {
    *b = (Behind){0};
    if (pthread_mutex_init(&b->lock, NULL) != 0) return -1;
    if (pthread_cond_init(&b->wake, NULL) != 0) {
        pthread_mutex_destroy(&b->lock);
        return -1;
    }
    if (pthread_cond_init(&b->done, NULL) != 0) {
        pthread_cond_destroy(&b->wake);
        pthread_mutex_destroy(&b->lock);
        return -1;
    }
    return 0;
}

/* The first failure of the writes behind, into this thread's ``failure``: -1 if there was one. */
static int behind_failed(Behind *b) {
    pthread_mutex_lock(&b->lock);
    int failed = b->failed;
    if (failed) failure = b->failure;
    pthread_mutex_unlock(&b->lock);
    return failed ? -1 : 0;
}

/* Hand ``data`` (``size`` bytes, freed when written) to be written at ``offset``, sorted
 * first if it holds ``keys`` index keys. With the GIL held: it is let go while the queue is
 * full. -1 with ``failure`` set, ``data`` freed. */
static int behind_submit(Behind *b, int fd, off_t offset, uint8_t *data, size_t size, size_t keys, int columns) {
    Job *job = malloc(sizeof(Job));
    if (job == NULL) {
        free(data);
        return fail_memory();
    }
    *job = (Job){NULL, fd, offset, data, size, keys, columns};
    pthread_mutex_lock(&b->lock);
    if (!b->started) {
        if (pthread_create(&b->thread, NULL, behind_worker, b) != 0) {
            pthread_mutex_unlock(&b->lock);
            free(job);
            free(data);
            errno = EAGAIN;
            return fail_os("start the writing thread");
        }
        b->started = 1;
    }
    if (b->pending > 0 && b->pending + size > BEHIND_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        while (b->pending > 0 && b->pending + size > BEHIND_BYTES) pthread_cond_wait(&b->done, &b->lock);
        Py_END_ALLOW_THREADS
    }
    if (b->failed) {
        failure = b->failure;
        pthread_mutex_unlock(&b->lock);
        free(job);
        free(data);
        return -1;
    }
    if (b->tail != NULL) b->tail->next = job;
    else b->head = job;
    b->tail = job;
    b->pending += size;
    pthread_cond_signal(&b->wake);
    pthread_mutex_unlock(&b->lock);
    return 0;
}

/* Wait until everything handed over is written, and end the thread (with the GIL held: it is
 * let go meanwhile). -1 with ``failure`` set if a write failed. */
static int behind_finish(Behind *b) {
    pthread_mutex_lock(&b->lock);
    int started = b->started;
    b->stop = 1;
    b->started = 0;
    pthread_cond_signal(&b->wake);
    pthread_mutex_unlock(&b->lock);
    if (started) {
        Py_BEGIN_ALLOW_THREADS
        pthread_join(b->thread, NULL);
        Py_END_ALLOW_THREADS
    }
    pthread_mutex_lock(&b->lock);
    b->stop = 0;
    pthread_mutex_unlock(&b->lock);
    return behind_failed(b);
}

/* Drop what is not yet written and end the thread: the table is abandoned. */
static void behind_abandon(Behind *b) {
    pthread_mutex_lock(&b->lock);
    b->failed = 1; /* the worker skips what is left */
    b->failure = (Failure){FAIL_OS, ECANCELED, "write (the table was abandoned)", NULL, 0};
    pthread_mutex_unlock(&b->lock);
    behind_finish(b);
}

static void behind_destroy(Behind *b) {
    pthread_cond_destroy(&b->done);
    pthread_cond_destroy(&b->wake);
    pthread_mutex_destroy(&b->lock);
}

static int writer_flush(Writer *w) {
    uint32_t page_size = w->pages->page_size;
    size_t size = (size_t)w->count * page_size;
    off_t offset = (off_t)(w->first - 1) * page_size;
    if (w->behind != NULL) { /* the buffer goes with the write; the next run gets another */
        uint8_t *next = malloc((size_t)w->size * page_size);
        if (next == NULL) return fail_memory();
        uint8_t *full = w->buffer;
        w->buffer = next;
        if (behind_submit(w->behind, w->pages->fd, offset, full, size, 0, 0) < 0) return -1;
    } else if (write_at(w->pages->fd, w->buffer, size, offset, "write") < 0) {
        return -1;
    }
    w->first += w->count;
    w->count = 0;
    return 0;
}

/* The page holding the bytes at 1 GiB, where SQLite takes its file locks: it never stores
 * anything there (fileformat2.html, "the lock-byte page"), and neither may this writer. */
static uint32_t lock_byte_page(uint32_t page_size) {
    return (uint32_t)(((uint64_t)1 << 30) / page_size) + 1;
}

/* Write one page; returns its number, 0 on error. */
static uint32_t emit_page(Writer *w, const uint8_t *page) {
    uint32_t page_size = w->pages->page_size;
    for (;;) {
        if (w->first + w->count == w->end) { /* the run is used up, or none is taken yet */
            if (w->count > 0 && writer_flush(w) < 0) return 0;
            pthread_mutex_lock(&w->pages->lock);
            w->first = w->pages->next;
            w->pages->next += w->size;
            pthread_mutex_unlock(&w->pages->lock);
            w->end = w->first + w->size;
        }
        if (w->first + w->count != lock_byte_page(page_size)) break;
        memset(w->buffer + (size_t)w->count * page_size, 0, page_size); /* left as zeros */
        w->count++;
    }
    memcpy(w->buffer + (size_t)w->count * page_size, page, page_size);
    return w->first + w->count++;
}

/* Write what is buffered, and give back the rest of the run or list it as unused. */
static int writer_close(Writer *w) {
    int failed = w->count > 0 ? writer_flush(w) : 0;
    Pages *pages = w->pages;
    pthread_mutex_lock(&pages->lock);
    if (pages->next == w->end) {
        pages->next = w->first;
    } else {
        for (uint32_t number = w->first; number < w->end && !failed; number++) {
            if (number == lock_byte_page(pages->page_size)) continue; /* never free, never used */
            if (grow((void **)&pages->unused, &pages->unused_capacity, pages->unused_count,
                     sizeof(uint32_t)) < 0)
                failed = -1;
            else
                pages->unused[pages->unused_count++] = number;
        }
    }
    pthread_mutex_unlock(&pages->lock);
    free(w->buffer);
    *w = (Writer){pages, NULL, 0, 0, 0, w->size};
    return failed;
}

/* ---- the table -------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *path;
    Pages pages;
    Writer writer;      /* the calling thread's: table pages, written behind */
    Behind behind;
    int behind_ready;
    uint8_t *leaf;      /* the table leaf being filled */
    int leaf_cells;
    uint32_t leaf_content;
    int64_t rowid;
    Children leaves;
    char affinity[MAX_COLUMNS];
    int column_count;
    Index indexes[MAX_INDEXES];
    int index_count;
    Bytes record, cell;
    Value values[MAX_COLUMNS];
    int finished;
    size_t spill_bytes; /* an index holds this many bytes of keys in memory, then spills them */
    char *table_path;   /* the table's file: index keys spill beside it */
} Builder;

/* Local bytes of a payload of ``size`` on a page (the rest goes to overflow pages). */
static size_t local_size(uint32_t page_size, size_t size, int index) {
    size_t usable = page_size;
    size_t most = index ? (usable - 12) * 64 / 255 - 23 : usable - 35;
    if (size <= most) return size;
    size_t least = (usable - 12) * 32 / 255 - 23;
    size_t local = least + (size - least) % (usable - 4);
    return local <= most ? local : least;
}

/* The cell bytes after any header fields: the local payload and, if it spills, the number
 * of its first overflow page (the overflow pages are written now). */
static int append_payload(Writer *w, Bytes *cell, const uint8_t *payload, size_t size, int index) {
    uint32_t page_size = w->pages->page_size;
    size_t local = local_size(page_size, size, index);
    if (bytes_append(cell, payload, local) < 0) return -1;
    if (local == size) return 0;
    /* Overflow pages are written before the page that points at them, so the chain is
     * written back to front: each page knows its successor's number only once that is
     * written. Numbers are assigned in writing order, so reverse by writing from the end. */
    size_t per_page = page_size - 4;
    size_t rest = size - local;
    size_t pages = (rest + per_page - 1) / per_page;
    uint8_t *page = calloc(1, page_size);
    if (page == NULL) return fail_memory();
    uint32_t next = 0;
    for (size_t i = pages; i-- > 0;) {
        size_t start = local + i * per_page;
        size_t n = size - start < per_page ? size - start : per_page;
        memset(page, 0, page_size);
        put_be(page, next, 4);
        memcpy(page + 4, payload + start, n);
        next = emit_page(w, page);
        if (next == 0) {
            free(page);
            return -1;
        }
    }
    free(page);
    uint8_t number[4];
    put_be(number, next, 4);
    return bytes_append(cell, number, 4);
}

/* A page being filled: header at ``start`` (100 on page 1), cells from the end down. */
typedef struct {
    uint8_t *data;
    uint32_t start, header, content;
    int cells;
} Page;

static void page_init(Page *p, uint8_t *data, uint32_t page_size, uint32_t start, int interior) {
    p->data = data;
    memset(data + start, 0, page_size - start);
    p->start = start;
    p->header = interior ? 12 : 8;
    p->content = page_size;
    p->cells = 0;
}

static int page_fits(const Page *p, size_t cell) {
    return p->start + p->header + 2 * (size_t)(p->cells + 1) + cell <= p->content;
}

static void page_add(Page *p, const uint8_t *cell, size_t size) {
    p->content -= (uint32_t)size;
    memcpy(p->data + p->content, cell, size);
    put_be(p->data + p->start + p->header + 2 * p->cells, p->content, 2);
    p->cells++;
}

static void page_seal(Page *p, int type, uint32_t right) {
    uint8_t *h = p->data + p->start;
    h[0] = (uint8_t)type;
    put_be(h + 3, (uint64_t)p->cells, 2);
    put_be(h + 5, p->content == 65536 ? 0 : p->content, 2);
    if (type == INTERIOR_TABLE || type == INTERIOR_INDEX) put_be(h + 8, right, 4);
}

/* Offset and size of a page's i-th cell. */
static const uint8_t *page_cell(const Page *p, int i) {
    uint32_t offset = (uint32_t)(p->data[p->start + p->header + 2 * i] << 8 | p->data[p->start + p->header + 2 * i + 1]);
    return p->data + offset;
}

/* ---- Python values to stored values ---------------------------------------------------- */

/* Row ``row``'s value in ``column``, as a column of that affinity stores it: T (text) or I
 * (integer), in lower case when the column is NOT NULL. Errors name the row by its first
 * value (tb_nodes: its id). */
static int to_value(const char *affinity, PyObject *row, int column, Value *v) {
    PyObject *o = PyTuple_GET_ITEM(row, column);
    int text = affinity[column] == 'T' || affinity[column] == 't';
    if (o == Py_None) {
        if (affinity[column] == 't' || affinity[column] == 'i') {
            PyErr_Format(PyExc_TypeError, "row %R, column %d: expected %s, got None",
                         PyTuple_GET_ITEM(row, 0), column, text ? "a str" : "an int or a float");
            return -1;
        }
        v->kind = 0;
        return 0;
    }
    if (text) {
        if (PyUnicode_Check(o)) {
            v->kind = 3;
            v->text = PyUnicode_AsUTF8AndSize(o, &v->length);
            return v->text == NULL ? -1 : 0;
        }
    } else if (PyLong_Check(o)) {
        int overflow;
        v->kind = 1;
        v->integer = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) {
            PyErr_Format(PyExc_OverflowError, "row %R, column %d: %R does not fit 64 bits",
                         PyTuple_GET_ITEM(row, 0), column, o);
            return -1;
        }
        return 0;
    } else if (PyFloat_Check(o)) {
        /* INTEGER affinity: a real that is a whole number is stored as an integer. */
        double d = PyFloat_AS_DOUBLE(o);
        if (isnan(d)) { /* SQLite stores NaN as NULL, which a NOT NULL column refuses */
            if (affinity[column] == 'i') {
                PyErr_Format(PyExc_TypeError, "row %R, column %d: got %R, stored as NULL, which the column may not hold",
                             PyTuple_GET_ITEM(row, 0), column, o);
                return -1;
            }
            v->kind = 0;
            return 0;
        }
        if (d == floor(d) && d > -9223372036854775808.0 && d < 9223372036854775808.0) {
            v->kind = 1;
            v->integer = (int64_t)d;
        } else {
            v->kind = 2;
            v->real = d;
        }
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "row %R, column %d: expected %s, got %R", PyTuple_GET_ITEM(row, 0),
                 column, text ? "a str or None" : "an int, a float or None", o);
    return -1;
}

/* A row's values, checked: a tuple of ``count`` values. */
static int row_values(const char *affinity, int count, PyObject *row, Value *values) {
    if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != count) {
        PyErr_Format(PyExc_TypeError, "expected a row: a tuple of %d values, got %R", count, row);
        return -1;
    }
    for (int i = 0; i < count; i++)
        if (to_value(affinity, row, i, &values[i]) < 0) return -1;
    return 0;
}

static int table_flush_leaf(Builder *self) {
    Page p = {self->leaf, 0, 8, self->leaf_content, self->leaf_cells};
    page_seal(&p, LEAF_TABLE, 0);
    uint32_t number = emit_page(&self->writer, self->leaf);
    if (number == 0) return -1;
    if (children_push(&self->leaves, number, self->rowid) < 0) return -1;
    memset(self->leaf, 0, self->pages.page_size);
    self->leaf_cells = 0;
    self->leaf_content = self->pages.page_size;
    return 0;
}

/* An unnamed file in the directory of ``path`` (never seen there, gone when closed), or -1. */
static int unnamed_file_beside(const char *path) {
    const char *slash = strrchr(path, '/');
    size_t length = slash == NULL ? 1 : (size_t)(slash - path) + (slash == path);
    char *directory = malloc(length + 1);
    if (directory == NULL) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(directory, slash == NULL ? "." : path, length);
    directory[length] = 0;
    int fd = -1;
#ifdef O_TMPFILE
    fd = open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (fd < 0) { /* no O_TMPFILE here, or not on this file system: a file unlinked at once */
        size_t size = length + 32;
        char *name = malloc(size);
        if (name != NULL) {
            snprintf(name, size, "%s/.graphboard-keys-XXXXXX", directory);
            fd = mkstemp(name);
            if (fd >= 0) {
                unlink(name);
                fcntl(fd, F_SETFD, FD_CLOEXEC);
            }
            free(name);
        }
    }
    free(directory);
    return fd;
}

/* The byte just after the key value at ``p``. */
static const uint8_t *key_skip_value(const uint8_t *p, const uint8_t *end) {
    if (*p == TAG_NULL) return p + 1;
    if (*p == TAG_INT) return p + 9;
    for (p++;;) { /* text: up to 0x00 0x00 (a 0x00 of its own is 0x00 0xff) */
        const uint8_t *zero = memchr(p, 0, (size_t)(end - p));
        if (zero == NULL || zero + 1 >= end) return NULL;
        p = zero + 2;
        if (zero[1] == 0) return p;
    }
}

/* References to the ``count`` keys in ``keys``, in the order they lie there. */
static KeyRef *refs_of(const Bytes *keys, size_t count, int column_count) {
    KeyRef *refs = malloc((count ? count : 1) * sizeof(KeyRef));
    if (refs == NULL) {
        fail_memory();
        return NULL;
    }
    const uint8_t *base = keys->data, *p = base, *end = base + keys->size;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *start = p;
        for (int c = 0; c <= column_count && p != NULL; c++) p = p < end ? key_skip_value(p, end) : NULL;
        if (p == NULL) {
            free(refs);
            errno = EIO;
            fail_os("read index keys (they end early)");
            return NULL;
        }
        refs[i] = (KeyRef){0, (uint64_t)(start - base), (uint32_t)(p - start)};
    }
    return refs;
}

/* Move the held keys, as one run, to the end of the index's spill file: handed to the table's
 * writing thread, which sorts and writes them (the run's place is known before: its keys and
 * their lengths). */
static int spill_keys(Builder *self, Index *index) {
    if (index->spill_fd < 0) {
        index->spill_fd = unnamed_file_beside(self->table_path);
        if (index->spill_fd < 0) return fail_os("create a file for index keys");
    }
    if (grow((void **)&index->runs, &index->run_capacity, index->run_count, sizeof(Run)) < 0) return -1;
    uint8_t *next = malloc(index->keys.capacity);
    if (next == NULL) return fail_memory();
    uint64_t bytes = index->keys.size + 4 * (uint64_t)index->held;
    index->runs[index->run_count++] = (Run){index->spilled, bytes};
    uint8_t *keys = index->keys.data;
    size_t size = index->keys.size, held = index->held;
    off_t offset = (off_t)index->spilled;
    index->spilled += bytes;
    index->keys = (Bytes){next, 0, index->keys.capacity};
    index->held = 0;
    return behind_submit(&self->behind, index->spill_fd, offset, keys, size, held, index->column_count);
}

/* Close the key begun with its rowid and keep it: held in memory up to the builder's
 * budget, then spilled. */
static int end_key(Builder *self, Index *index, int64_t rowid) {
    Value id = {1, rowid, 0, NULL, 0};
    if (key_append_value(&index->keys, &id) < 0) return -1;
    index->count++;
    index->held++;
    return index->keys.size >= self->spill_bytes ? spill_keys(self, index) : 0;
}

/* Put the record of row ``rowid`` into the table leaf being filled. */
static int add_table_cell(Builder *self, const uint8_t *record, size_t size, int64_t rowid) {
    uint8_t head[18];
    int n = put_varint(head, size);
    n += put_varint(head + n, (uint64_t)rowid);
    size_t local = local_size(self->pages.page_size, size, 0);
    size_t cell_size = (size_t)n + local + (local < size ? 4 : 0);
    Page p = {self->leaf, 0, 8, self->leaf_content, self->leaf_cells};
    if (!page_fits(&p, cell_size)) {
        if (table_flush_leaf(self) < 0) return -1;
        p = (Page){self->leaf, 0, 8, self->leaf_content, self->leaf_cells};
    }
    self->cell.size = 0;
    if (bytes_append(&self->cell, head, (size_t)n) < 0) return -1;
    if (append_payload(&self->writer, &self->cell, record, size, 0) < 0) return -1;
    page_add(&p, self->cell.data, self->cell.size);
    self->leaf_cells = p.cells;
    self->leaf_content = p.content;
    self->rowid = rowid;
    return 0;
}

static int append_row(Builder *self, PyObject *row) {
    if (row_values(self->affinity, self->column_count, row, self->values) < 0) return -1;
    int64_t rowid = self->rowid + 1;
    for (int x = 0; x < self->index_count; x++) {
        Index *index = &self->indexes[x];
        for (int c = 0; c < index->column_count; c++)
            if (key_append_value(&index->keys, &self->values[index->columns[c]]) < 0) return -1;
        if (end_key(self, index, rowid) < 0) return -1;
    }
    self->record.size = 0;
    if (encode_record(&self->record, self->values, self->column_count) < 0) return -1;
    return add_table_cell(self, self->record.data, self->record.size, rowid);
}

/* ---- interior levels ----------------------------------------------------------------- */

/* Table interior pages over ``level`` (children in order) until one page is left: the root. */
static uint32_t build_table_interior(Builder *self, Children *level) {
    uint32_t page_size = self->pages.page_size;
    uint8_t *data = malloc(page_size);
    if (data == NULL) {
        fail_memory();
        return 0;
    }
    Children next = {0};
    while (level->count > 1) {
        /* A cell is at most 4 + 9 bytes and a 2-byte pointer: spread the children evenly so
         * that no page is left with a single child (an interior page needs a cell). */
        size_t per_page = (page_size - 12) / 15 + 1;
        size_t pages = (level->count + per_page - 1) / per_page;
        size_t done = 0;
        next.count = 0;
        for (size_t page = 0; page < pages; page++) {
            size_t take = (level->count - done) / (pages - page);
            Page p;
            page_init(&p, data, page_size, 0, 1);
            for (size_t i = 0; i + 1 < take; i++) {
                uint8_t cell[13];
                Child *c = &level->items[done + i];
                put_be(cell, c->page, 4);
                int n = 4 + put_varint(cell + 4, (uint64_t)c->last);
                page_add(&p, cell, (size_t)n);
            }
            Child *right = &level->items[done + take - 1];
            page_seal(&p, INTERIOR_TABLE, right->page);
            uint32_t number = emit_page(&self->writer, data);
            if (number == 0 || children_push(&next, number, right->last) < 0) {
                free(data);
                free(next.items);
                return 0;
            }
            done += take;
        }
        Children swap = *level;
        *level = next;
        next = swap;
    }
    free(data);
    free(next.items);
    return level->items[0].page;
}

/* An index level's output: pages and the divider cells between them (each a payload
 * cell without its 4-byte child number). */
typedef struct {
    Children pages;
    Bytes cells;
    size_t *ends; /* ends[i]: end of divider i in cells */
    size_t count, capacity;
} Dividers;

static int dividers_push(Dividers *d, const uint8_t *cell, size_t size) {
    if (grow((void **)&d->ends, &d->capacity, d->count, sizeof(size_t)) < 0) return -1;
    if (bytes_append(&d->cells, cell, size) < 0) return -1;
    d->ends[d->count++] = d->cells.size;
    return 0;
}

static void dividers_free(Dividers *d) {
    free(d->pages.items);
    free(d->cells.data);
    free(d->ends);
    memset(d, 0, sizeof(*d));
}

/* Pack ``count`` cells (``cell(i)``) into pages of ``type``; between two pages one cell
 * goes up as their divider. The last page must keep a cell: if the cell that does not fit
 * is the very last, the one before it goes up instead. For interior pages, cell i is
 * preceded by child ``children[i]`` and the last page's right child is ``children[count]``.
 */
typedef const uint8_t *(*CellAt)(void *context, size_t i, size_t *size);

static int pack_index_level(Writer *w, size_t count, CellAt cell_at, void *context,
                            const Children *children, Dividers *out) {
    int interior = children != NULL;
    int type = interior ? INTERIOR_INDEX : LEAF_INDEX;
    uint32_t page_size = w->pages->page_size;
    uint8_t *data = malloc(page_size);
    uint8_t *moved = malloc(page_size);
    uint8_t *cell = malloc(page_size);
    if (data == NULL || moved == NULL || cell == NULL) {
        free(data);
        free(moved);
        free(cell);
        return fail_memory();
    }
    Page p;
    page_init(&p, data, page_size, 0, interior);
    for (size_t i = 0; i < count; i++) {
        size_t size;
        const uint8_t *payload = cell_at(context, i, &size);
        if (payload == NULL) goto fail;
        size_t n = 0;
        if (interior) put_be(cell, children->items[i].page, 4), n = 4;
        memcpy(cell + n, payload, size);
        n += size;
        if (page_fits(&p, n)) {
            page_add(&p, cell, n);
            continue;
        }
        /* cell i does not fit: it becomes the divider, unless nothing would follow it */
        uint32_t right = interior ? children->items[i].page : 0;
        const uint8_t *divider = cell + (interior ? 4 : 0);
        size_t divider_size = size;
        int back_off = i == count - 1;
        if (back_off) { /* the page's last cell goes up; cell i starts the last page */
            /* cells lie from the end of the page down: the last one added starts at
             * ``content`` and ends where the one before it starts */
            const uint8_t *last = page_cell(&p, p.cells - 1);
            size_t end = p.cells >= 2 ? (size_t)(page_cell(&p, p.cells - 2) - p.data) : page_size;
            size_t last_length = end - p.content;
            memcpy(moved, last, last_length);
            memset(p.data + p.content, 0, last_length);
            p.cells--;
            p.content += (uint32_t)last_length;
            memset(p.data + p.header + 2 * p.cells, 0, 2);
            right = interior ? children->items[i - 1].page : 0;
            divider = moved + (interior ? 4 : 0);
            divider_size = last_length - (interior ? 4 : 0);
        }
        page_seal(&p, type, right);
        uint32_t number = emit_page(w, data);
        if (number == 0 || children_push(&out->pages, number, 0) < 0) goto fail;
        if (dividers_push(out, divider, divider_size) < 0) goto fail;
        page_init(&p, data, page_size, 0, interior);
        if (back_off) page_add(&p, cell, n); /* else cell i went up as the divider */
    }
    page_seal(&p, type, interior ? children->items[count].page : 0);
    uint32_t number = emit_page(w, data);
    if (number == 0 || children_push(&out->pages, number, 0) < 0) goto fail;
    free(data);
    free(moved);
    free(cell);
    return 0;
fail:
    free(data);
    free(moved);
    free(cell);
    return -1;
}

typedef struct {
    Writer *writer;
    Index *index;
    Bytes scratch;
    Bytes record;
    Bytes cell;
    Value values[MAX_COLUMNS + 1];
} LeafKeys;

/* The index cell of the key at ``p`` (``length`` bytes): its values as a SQLite record. */
static const uint8_t *key_cell(LeafKeys *k, const uint8_t *p, size_t length, size_t *size) {
    const uint8_t *end = p + length;
    k->scratch.size = 0;
    int count = k->index->column_count + 1;
    for (int c = 0; c < count; c++) {
        p = key_read_value(p, end, &k->values[c], &k->scratch);
        if (p == NULL) return NULL;
    }
    for (int c = 0; c < count; c++)
        if (k->values[c].kind == 3) k->values[c].text = (const char *)k->scratch.data + (uintptr_t)k->values[c].text;
    k->record.size = 0;
    if (encode_record(&k->record, k->values, count) < 0) return NULL;
    k->cell.size = 0;
    uint8_t head[9];
    int n = put_varint(head, k->record.size);
    if (bytes_append(&k->cell, head, (size_t)n) < 0) return NULL;
    if (append_payload(k->writer, &k->cell, k->record.data, k->record.size, 1) < 0) return NULL;
    *size = k->cell.size;
    return k->cell.data;
}

static const uint8_t *divider_at(void *context, size_t i, size_t *size) {
    Dividers *d = context;
    size_t start = i ? d->ends[i - 1] : 0;
    *size = d->ends[i] - start;
    return d->cells.data + start;
}

/* Sort ``count`` key references into key order: by the 8 bytes after the keys' common
 * prefix, then the rest. */
static void sort_refs(const uint8_t *base, KeyRef *refs, size_t count) {
    size_t common = 0;
    if (count > 0) {
        common = refs[0].length;
        const uint8_t *first = base + refs[0].offset;
        for (size_t i = 1; i < count && common > 0; i++) {
            const uint8_t *key = base + refs[i].offset;
            size_t n = refs[i].length < common ? refs[i].length : common;
            size_t same = 0;
            while (same < n && key[same] == first[same]) same++;
            common = same;
        }
    }
    for (size_t i = 0; i < count; i++) {
        KeyRef *r = &refs[i];
        uint8_t bytes[8] = {0};
        size_t available = r->length > common ? r->length - common : 0;
        memcpy(bytes, base + r->offset + common, available < 8 ? available : 8);
        uint64_t prefix = 0;
        for (int b = 0; b < 8; b++) prefix = prefix << 8 | bytes[b];
        r->prefix = prefix;
    }
    SortKeys keys = {base, common};
    int sorted = 1;
    for (size_t i = 1; i < count && sorted; i++)
        if (compare_refs(&refs[i - 1], &refs[i], &keys) > 0) sorted = 0;
    if (!sorted) qsort_r(refs, count, sizeof(KeyRef), compare_refs, &keys);
}

/* Whether two keys are equal but for their rowids (its tag and 8 bytes, last). */
static int same_but_rowid(const uint8_t *a, size_t a_length, const uint8_t *b, size_t b_length) {
    return a_length == b_length && memcmp(a, b, a_length - 9) == 0;
}

/* Whether a key holds a NULL among its values (its rowid, last, never is). */
static int key_has_null(const uint8_t *key, size_t length) {
    const uint8_t *end = key + length;
    for (const uint8_t *p = key; p != NULL && p < end; p = key_skip_value(p, end))
        if (*p == TAG_NULL) return 1;
    return 0;
}

/* Record a unique index's duplicate key (a copy, in ``index->keys``) for raise_failure. */
static int fail_duplicate(Index *index, const uint8_t *key, size_t length) {
    Bytes copy = {0};
    KeyRef *ref = malloc(sizeof(KeyRef));
    if (ref == NULL || bytes_append(&copy, key, length) < 0) {
        free(ref);
        free(copy.data);
        return fail_memory();
    }
    free(index->keys.data);
    free(index->refs);
    index->keys = copy;
    index->refs = ref;
    *ref = (KeyRef){0, 0, (uint32_t)length};
    failure = (Failure){FAIL_DUPLICATE, 0, NULL, index, 0};
    return -1;
}

/* ---- merging the runs of keys ---------------------------------------------------------
 * An index's keys are its spilled runs (sorted, in the spill file) and the keys still held
 * (sorted at the end), merged through a heap of one reader per run: only a buffer per run
 * is in memory. An index that never spilled is one run, its held keys. */

typedef struct {
    int fd;                 /* the spill file; -1 for the held keys */
    uint64_t next, end;     /* the part of the run still to read */
    Bytes buffer;
    size_t start;           /* unread bytes: buffer.data[start .. buffer.size) */
    const KeyRef *refs;     /* the held keys: in order, ``at`` of ``count`` taken */
    const uint8_t *base;
    size_t at, count;
    const uint8_t *key;     /* the reader's current key, NULL once it is done */
    size_t length;
} RunReader;

enum { RUN_BUFFER = 1 << 18 };

/* At least ``want`` unread bytes in the reader's buffer (fewer only at the run's end). */
static int reader_fill(RunReader *r, size_t want) {
    size_t unread = r->buffer.size - r->start;
    if (unread >= want || r->next == r->end) return 0;
    if (unread > 0) memmove(r->buffer.data, r->buffer.data + r->start, unread); /* no buffer yet: NULL */
    r->buffer.size = unread;
    r->start = 0;
    size_t rest = unread + (size_t)(r->end - r->next); /* no more than the run holds */
    size_t room = want > RUN_BUFFER ? want : RUN_BUFFER < rest ? RUN_BUFFER : rest;
    if (bytes_reserve(&r->buffer, room - unread) < 0) return -1;
    while (r->buffer.size < want && r->next < r->end) {
        size_t ask = r->buffer.capacity - r->buffer.size;
        if (ask > r->end - r->next) ask = (size_t)(r->end - r->next);
        ssize_t n = pread(r->fd, r->buffer.data + r->buffer.size, ask, (off_t)r->next);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;
            return fail_os("read index keys back");
        }
        r->buffer.size += (size_t)n;
        r->next += (uint64_t)n;
    }
    return 0;
}

/* Move the reader to its next key (``key`` NULL at the end). */
static int reader_advance(RunReader *r) {
    if (r->fd < 0) {
        if (r->at == r->count) {
            r->key = NULL;
            return 0;
        }
        r->key = r->base + r->refs[r->at].offset;
        r->length = r->refs[r->at++].length;
        return 0;
    }
    if (r->key != NULL) r->start += r->length; /* the key taken last */
    if (reader_fill(r, 4) < 0) return -1;
    if (r->buffer.size - r->start == 0) {
        r->key = NULL;
        return 0;
    }
    const uint8_t *head = r->buffer.data + r->start;
    size_t length = (size_t)head[0] << 24 | (size_t)head[1] << 16 | (size_t)head[2] << 8 | head[3];
    r->start += 4;
    if (reader_fill(r, length) < 0) return -1;
    if (r->buffer.size - r->start < length) {
        errno = EIO;
        return fail_os("read index keys back (a run ends early)");
    }
    r->key = r->buffer.data + r->start;
    r->length = length;
    return 0;
}

static int reader_before(const RunReader *a, const RunReader *b) {
    size_t n = a->length < b->length ? a->length : b->length;
    int c = memcmp(a->key, b->key, n);
    return c ? c < 0 : a->length < b->length;
}

typedef struct {
    LeafKeys leaf;
    RunReader **heap; /* the readers with keys left, the next key's first */
    size_t size;
    Bytes taken;      /* the key given last */
} Merge;

static void heap_down(Merge *m, size_t i) {
    for (;;) {
        size_t least = i, left = 2 * i + 1, right = left + 1;
        if (left < m->size && reader_before(m->heap[left], m->heap[least])) least = left;
        if (right < m->size && reader_before(m->heap[right], m->heap[least])) least = right;
        if (least == i) return;
        RunReader *swap = m->heap[i];
        m->heap[i] = m->heap[least];
        m->heap[least] = swap;
        i = least;
    }
}

static const uint8_t *merged_key_at(void *context, size_t i, size_t *size) {
    (void)i; /* keys are asked for in order */
    Merge *m = context;
    Index *index = m->leaf.index;
    if (m->size == 0) {
        errno = EIO;
        fail_os("merge index keys (fewer than written)");
        return NULL;
    }
    RunReader *r = m->heap[0];
    /* Keys with a NULL are never the same key: SQLite's unique indexes hold any number of them
     * (a TEXT PRIMARY KEY too, which SQLite lets hold NULL) */
    if (index->unique && m->taken.size && same_but_rowid(m->taken.data, m->taken.size, r->key, r->length) &&
        !key_has_null(r->key, r->length)) {
        fail_duplicate(index, r->key, r->length);
        return NULL;
    }
    m->taken.size = 0;
    if (bytes_append(&m->taken, r->key, r->length) < 0 || reader_advance(r) < 0) return NULL;
    if (r->key == NULL) m->heap[0] = m->heap[--m->size];
    heap_down(m, 0);
    return key_cell(&m->leaf, m->taken.data, m->taken.size, size);
}

/* Pack the index's leaves into ``level``, its keys taken in order from the held ones (sorted
 * here) and its spilled runs, merged; -1 on error. */
static int pack_leaves(Writer *w, Index *index, Dividers *level) {
    size_t readers_count = index->run_count + 1;
    RunReader *readers = calloc(readers_count, sizeof(RunReader));
    Merge m = {{w, index, {0}, {0}, {0}, {{0}}}, calloc(readers_count, sizeof(RunReader *)), 0, {0}};
    int failed = readers == NULL || m.heap == NULL ? fail_memory() : 0;
    if (!failed) {
        index->refs = refs_of(&index->keys, index->held, index->column_count);
        failed = index->refs == NULL;
    }
    if (!failed) sort_refs(index->keys.data, index->refs, index->held);
    for (size_t x = 0; x < readers_count && !failed; x++) {
        RunReader *r = &readers[x];
        if (x < index->run_count) {
            *r = (RunReader){index->spill_fd, index->runs[x].offset,
                             index->runs[x].offset + index->runs[x].bytes, {0}, 0, NULL, NULL, 0, 0, NULL, 0};
        } else {
            *r = (RunReader){-1, 0, 0, {0}, 0, index->refs, index->keys.data, 0, index->held, NULL, 0};
        }
        failed = reader_advance(r) < 0;
        if (!failed && r->key != NULL) m.heap[m.size++] = r;
    }
    for (size_t x = m.size; x-- > 0 && !failed;) heap_down(&m, x);
    if (!failed) failed = pack_index_level(w, index->count, merged_key_at, &m, NULL, level) != 0;
    if (!failed && m.size != 0) {
        errno = EIO;
        failed = fail_os("merge index keys (more than counted)");
    }
    for (size_t x = 0; readers != NULL && x < readers_count; x++) free(readers[x].buffer.data);
    free(readers);
    free(m.heap);
    free(m.taken.data);
    free(m.leaf.scratch.data);
    free(m.leaf.record.data);
    free(m.leaf.cell.data);
    return failed ? -1 : 0;
}

/* Sort an index's keys and write its B-tree; returns the root page, 0 on error. */
static uint32_t build_index(Writer *w, Index *index) {
    Dividers level = {0};
    int failed = pack_leaves(w, index, &level) < 0;
    if (failed && failure.kind == FAIL_DUPLICATE) {
        dividers_free(&level);
        return 0; /* the duplicate stays, for raise_failure to show */
    }
    while (!failed && level.pages.count > 1) {
        Dividers up = {0};
        failed = pack_index_level(w, level.count, divider_at, &level, &level.pages, &up);
        dividers_free(&level);
        level = up;
    }
    uint32_t root = failed ? 0 : level.pages.items[0].page;
    dividers_free(&level);
    /* the keys are no longer needed */
    free(index->keys.data);
    free(index->refs);
    memset(&index->keys, 0, sizeof(index->keys));
    index->refs = NULL;
    index->count = index->held = 0;
    if (index->spill_fd >= 0) close(index->spill_fd);
    index->spill_fd = -1;
    return root;
}

/* ---- Python type ------------------------------------------------------------------------ */

static void builder_release(Builder *self) {
    if (self->behind_ready) behind_abandon(&self->behind); /* before its files close */
    free(self->writer.buffer);
    free(self->leaf);
    free(self->leaves.items);
    free(self->record.data);
    free(self->cell.data);
    free(self->pages.unused);
    self->writer.buffer = self->leaf = NULL;
    self->leaves.items = NULL;
    self->record.data = self->cell.data = NULL;
    self->pages.unused = NULL;
    for (int x = 0; x < self->index_count; x++) {
        free(self->indexes[x].keys.data);
        free(self->indexes[x].refs);
        self->indexes[x].keys.data = NULL;
        self->indexes[x].refs = NULL;
        if (self->indexes[x].spill_fd >= 0) close(self->indexes[x].spill_fd);
        self->indexes[x].spill_fd = -1;
        free(self->indexes[x].runs);
        self->indexes[x].runs = NULL;
    }
    free(self->table_path);
    self->table_path = NULL;
    if (self->pages.fd >= 0) close(self->pages.fd);
    self->pages.fd = -1;
}

static void builder_dealloc(Builder *self) {
    builder_release(self);
    if (self->behind_ready) behind_destroy(&self->behind);
    pthread_mutex_destroy(&self->pages.lock);
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int builder_init(Builder *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"path", "affinities", "indexes", "page_size", "spill_bytes", NULL};
    PyObject *path, *indexes;
    const char *affinities;
    unsigned int page_size = 4096;
    Py_ssize_t spill_bytes = 8 << 20;
    for (int x = 0; x < MAX_INDEXES; x++) self->indexes[x].spill_fd = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&sO|In", keywords, PyUnicode_FSDecoder, &path,
                                     &affinities, &indexes, &page_size, &spill_bytes))
        return -1;
    self->path = path;
    self->pages.fd = -1;
    if (spill_bytes < 1) {
        PyErr_SetString(PyExc_ValueError, "spill_bytes must be at least 1");
        return -1;
    }
    self->spill_bytes = (size_t)spill_bytes;
    self->table_path = strdup(PyUnicode_AsUTF8(path));
    if (self->table_path == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1))) {
        PyErr_SetString(PyExc_ValueError, "page_size must be a power of two from 512 to 65536");
        return -1;
    }
    self->column_count = (int)strlen(affinities);
    if (self->column_count == 0 || self->column_count > MAX_COLUMNS) {
        PyErr_SetString(PyExc_ValueError, "affinities: one letter (T, I, t or i) per column, at most 64");
        return -1;
    }
    for (int i = 0; i < self->column_count; i++) {
        if (strchr("TIti", affinities[i]) == NULL || affinities[i] == 0) {
            PyErr_SetString(PyExc_ValueError,
                            "affinities: T (text) or I (integer) per column, t or i when NOT NULL");
            return -1;
        }
        self->affinity[i] = affinities[i];
    }
    PyObject *seq = PySequence_Fast(indexes, "indexes: a list of (unique, (column, ...))");
    if (seq == NULL) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    if (count > MAX_INDEXES) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "at most 16 indexes");
        return -1;
    }
    for (Py_ssize_t x = 0; x < count; x++) {
        Index *index = &self->indexes[x];
        PyObject *columns;
        int unique;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, x), "pO", &unique, &columns)) {
            Py_DECREF(seq);
            return -1;
        }
        PyObject *cols = PySequence_Fast(columns, "index columns: a sequence of column numbers");
        if (cols == NULL) {
            Py_DECREF(seq);
            return -1;
        }
        index->unique = unique;
        index->column_count = (int)PySequence_Fast_GET_SIZE(cols);
        for (int c = 0; c < index->column_count; c++) {
            long column = PyLong_AsLong(PySequence_Fast_GET_ITEM(cols, c));
            if (column < 0 || column >= self->column_count) {
                Py_DECREF(cols);
                Py_DECREF(seq);
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "index column out of range");
                return -1;
            }
            index->columns[c] = (int)column;
        }
        Py_DECREF(cols);
        self->index_count++;
    }
    Py_DECREF(seq);
    self->pages.page_size = page_size;
    self->pages.next = 2; /* page 1 is written last */
    if (pthread_mutex_init(&self->pages.lock, NULL) != 0) {
        PyErr_SetString(PyExc_OSError, "cannot create a lock");
        return -1;
    }
    self->leaf = calloc(1, page_size);
    if (self->leaf == NULL || writer_open(&self->writer, &self->pages) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (behind_init(&self->behind) < 0) {
        PyErr_SetString(PyExc_OSError, "cannot create a lock");
        return -1;
    }
    self->behind_ready = 1;
    self->writer.behind = &self->behind;
    self->leaf_content = page_size;
    self->pages.fd = open(PyUnicode_AsUTF8(path), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (self->pages.fd < 0) {
        fail_os("create the file");
        raise_failure();
        return -1;
    }
    return 0;
}

static PyObject *builder_append(Builder *self, PyObject *rows) {
    if (self->finished || self->pages.fd < 0) {
        PyErr_SetString(PyExc_ValueError, "the table is already finished");
        return NULL;
    }
    PyObject *iterator = PyObject_GetIter(rows);
    if (iterator == NULL) return NULL;
    PyObject *row;
    while ((row = PyIter_Next(iterator)) != NULL) {
        int failed = append_row(self, row);
        Py_DECREF(row);
        if (failed) {
            raise_failure();
            Py_DECREF(iterator);
            return NULL;
        }
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) return NULL;
    if (behind_failed(&self->behind) < 0) {
        raise_failure();
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- finishing --------------------------------------------------------------------------
 * The indexes are independent: each is sorted and packed by one of ``threads`` threads (this
 * one among them), the largest first, without the GIL. At a million records a side their
 * keys take seconds to sort and pack, while the other core would wait. */

typedef struct {
    Builder *self;
    int order[MAX_INDEXES]; /* the indexes, largest first */
    int next;               /* the next to take */
    uint32_t *roots;
    int failed;
    Failure failure; /* the first failure */
    pthread_mutex_t lock;
} IndexWork;

static void *index_worker(void *context) {
    IndexWork *work = context;
    Builder *self = work->self;
    Writer w;
    int failed = writer_open(&w, &self->pages) < 0;
    while (!failed) {
        pthread_mutex_lock(&work->lock);
        int x = work->failed || work->next == self->index_count ? -1 : work->order[work->next++];
        pthread_mutex_unlock(&work->lock);
        if (x < 0) break;
        work->roots[x] = build_index(&w, &self->indexes[x]);
        failed = work->roots[x] == 0;
    }
    if (w.buffer != NULL && writer_close(&w) < 0) failed = 1;
    if (failed) {
        pthread_mutex_lock(&work->lock);
        if (!work->failed) {
            work->failed = 1;
            work->failure = failure;
        }
        pthread_mutex_unlock(&work->lock);
    }
    return NULL;
}

static uint64_t index_bytes(const Index *index) {
    return index->spilled + index->keys.size;
}

/* Build every index into ``roots``; -1 (with ``failure`` set) on error. */
static int build_indexes(Builder *self, int threads, uint32_t *roots) {
    IndexWork work = {self, {0}, 0, roots, 0, {0}, PTHREAD_MUTEX_INITIALIZER};
    int count = self->index_count;
    for (int i = 0; i < count; i++) { /* insertion sort by key bytes, largest first */
        int x = i;
        for (; x > 0 && index_bytes(&self->indexes[work.order[x - 1]]) < index_bytes(&self->indexes[i]); x--)
            work.order[x] = work.order[x - 1];
        work.order[x] = i;
    }
    int extra = threads - 1 < count - 1 ? threads - 1 : count - 1;
    pthread_t ids[MAX_INDEXES];
    int started = 0;
    Py_BEGIN_ALLOW_THREADS
    while (started < extra && pthread_create(&ids[started], NULL, index_worker, &work) == 0) started++;
    index_worker(&work); /* fewer threads started than asked: still done, only slower */
    for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
    Py_END_ALLOW_THREADS
    pthread_mutex_destroy(&work.lock);
    if (work.failed) {
        failure = work.failure;
        return -1;
    }
    return 0;
}

static int compare_numbers(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Put the page numbers taken and left unused on the freelist (trunk pages listing leaf
 * pages); those at the end of the file are dropped instead. */
static int write_freelist(Pages *pages, uint32_t *free_pages, uint32_t *first_trunk) {
    size_t count = pages->unused_count;
    if (count > 1) qsort(pages->unused, count, sizeof(uint32_t), compare_numbers); /* NULL when none */
    for (;;) { /* unused pages at the end go, and the lock-byte page if it comes last */
        if (count > 0 && pages->unused[count - 1] == pages->next - 1)
            count--;
        else if (pages->next - 1 != lock_byte_page(pages->page_size))
            break;
        pages->next--;
    }
    *free_pages = (uint32_t)count;
    *first_trunk = count ? pages->unused[0] : 0;
    /* SQLite reads up to page_size / 4 - 2 leaves per trunk, and writes 6 fewer */
    size_t per_trunk = pages->page_size / 4 - 8;
    uint8_t *trunk = calloc(1, pages->page_size);
    if (trunk == NULL) return fail_memory();
    for (size_t i = 0; i < count;) {
        size_t leaves = count - i - 1 < per_trunk ? count - i - 1 : per_trunk;
        uint32_t number = pages->unused[i];
        size_t next = i + 1 + leaves;
        memset(trunk, 0, pages->page_size);
        put_be(trunk, next < count ? pages->unused[next] : 0, 4);
        put_be(trunk + 4, leaves, 4);
        for (size_t l = 0; l < leaves; l++) put_be(trunk + 8 + 4 * l, pages->unused[i + 1 + l], 4);
        if (write_at(pages->fd, trunk, pages->page_size, (off_t)(number - 1) * pages->page_size,
                     "write the freelist") < 0) {
            free(trunk);
            return -1;
        }
        i = next;
    }
    free(trunk);
    return 0;
}

/* sqlite_schema rows: (type, name, tbl_name, sql) for the table, then one per index. */
static PyObject *builder_finish(Builder *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"schema_rows", "sqlite_version", "threads", NULL};
    PyObject *schema_rows;
    unsigned int version;
    int threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OI|i", keywords, &schema_rows, &version, &threads))
        return NULL;
    if (self->finished || self->pages.fd < 0) {
        PyErr_SetString(PyExc_ValueError, "the table is already finished");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(schema_rows, "schema rows: a list of (type, name, tbl_name, sql)");
    if (seq == NULL) return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != self->index_count + 1) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "one schema row for the table and one per index");
        return NULL;
    }
    uint32_t roots[MAX_INDEXES + 1];
    uint32_t page_size = self->pages.page_size;
    uint8_t *page1 = NULL;
    Bytes record = {0};
    /* the table: its last leaf (even empty: an empty table is one empty leaf) */
    if (self->leaf_cells > 0 || self->leaves.count == 0)
        if (table_flush_leaf(self) < 0) goto fail;
    roots[0] = build_table_interior(self, &self->leaves);
    if (roots[0] == 0 || writer_close(&self->writer) < 0) goto fail;
    if (behind_finish(&self->behind) < 0) goto fail; /* the spilled runs are read next */
    if (build_indexes(self, threads, roots + 1) < 0) goto fail;
    page1 = calloc(1, page_size);
    if (page1 == NULL) {
        fail_memory();
        goto fail;
    }
    uint32_t free_pages = 0, first_trunk = 0;
    if (write_freelist(&self->pages, &free_pages, &first_trunk) < 0) goto fail;
    /* page 1: the database header and sqlite_schema */
    Page p;
    page_init(&p, page1, page_size, 100, 0);
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *type, *name, *table, *sql;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "UUUO", &type, &name, &table, &sql)) goto fail;
        Value values[5];
        PyObject *texts[3] = {type, name, table};
        for (int t = 0; t < 3; t++) {
            values[t].kind = 3;
            values[t].text = PyUnicode_AsUTF8AndSize(texts[t], &values[t].length);
            if (values[t].text == NULL) goto fail;
        }
        values[3] = (Value){1, roots[i], 0, NULL, 0};
        if (sql == Py_None) {
            values[4].kind = 0;
        } else {
            values[4].kind = 3;
            values[4].text = PyUnicode_AsUTF8AndSize(sql, &values[4].length);
            if (values[4].text == NULL) goto fail;
        }
        record.size = 0;
        if (encode_record(&record, values, 5) < 0) goto fail;
        uint8_t head[18];
        int n = put_varint(head, record.size);
        n += put_varint(head + n, (uint64_t)(i + 1));
        if (!page_fits(&p, n + record.size)) {
            PyErr_SetString(PyExc_ValueError, "the schema does not fit on the first page");
            goto fail;
        }
        self->cell.size = 0;
        if (bytes_append(&self->cell, head, (size_t)n) < 0 ||
            bytes_append(&self->cell, record.data, record.size) < 0)
            goto fail;
        page_add(&p, self->cell.data, self->cell.size);
    }
    page_seal(&p, LEAF_TABLE, 0);
    memcpy(page1, "SQLite format 3", 16);
    put_be(page1 + 16, page_size == 65536 ? 1 : page_size, 2);
    page1[18] = 1;  /* rollback journal (legacy) for writing and reading */
    page1[19] = 1;
    page1[20] = 0;  /* no reserved bytes per page */
    page1[21] = 64; /* payload fractions, fixed by the format */
    page1[22] = 32;
    page1[23] = 32;
    put_be(page1 + 24, 1, 4);               /* file change counter */
    put_be(page1 + 28, self->pages.next - 1, 4); /* pages in the file */
    put_be(page1 + 32, first_trunk, 4);            /* the freelist */
    put_be(page1 + 36, free_pages, 4);
    put_be(page1 + 40, 1, 4);               /* schema cookie */
    put_be(page1 + 44, 4, 4);               /* schema format */
    put_be(page1 + 56, 1, 4);               /* UTF-8 */
    put_be(page1 + 92, 1, 4);               /* version-valid-for: the change counter */
    put_be(page1 + 96, version, 4);
    if (write_at(self->pages.fd, page1, page_size, 0, "write the first page") < 0) goto fail;
    int fd = self->pages.fd;
    self->pages.fd = -1;
    if (close(fd) < 0) {
        fail_os("close");
        goto fail;
    }
    self->finished = 1;
    free(page1);
    free(record.data);
    Py_DECREF(seq);
    builder_release(self);
    Py_RETURN_NONE;
fail:
    raise_failure(); /* before the release: a duplicate key is shown from its index */
    free(page1);
    free(record.data);
    Py_DECREF(seq);
    builder_release(self);
    return NULL;
}

static PyObject *builder_close(Builder *self, PyObject *unused) {
    builder_release(self);
    Py_RETURN_NONE;
}

static PyObject *builder_rows(Builder *self, void *closure) {
    return PyLong_FromLongLong(self->rowid);
}

static PyMethodDef builder_methods[] = {
    {"append", (PyCFunction)builder_append, METH_O,
     "append(rows): add rows (tuples), numbered on from the last rowid"},
    {"finish", (PyCFunction)(void (*)(void))builder_finish, METH_VARARGS | METH_KEYWORDS,
     "finish(schema_rows, sqlite_version, threads=1): write the indexes (on ``threads`` threads) "
     "and page 1, close the file"},
    {"close", (PyCFunction)builder_close, METH_NOARGS, "close(): give up (the caller removes the file)"},
    {NULL},
};

static PyGetSetDef builder_getset[] = {
    {"rows", (getter)builder_rows, NULL, "rows appended so far", NULL},
    {NULL},
};

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "graphboard_btree._btree.TableFile",
    .tp_basicsize = sizeof(Builder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TableFile(path, affinities, indexes, page_size=4096): a new SQLite file holding "
              "one table and its indexes, written in bulk",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)builder_init,
    .tp_dealloc = (destructor)builder_dealloc,
    .tp_methods = builder_methods,
    .tp_getset = builder_getset,
};

static PyMethodDef module_methods[] = {
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_btree", "A table and its indexes written straight into SQLite's format.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__btree(void) {
    if (PyType_Ready(&BuilderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "LAYOUT_VERSION", LAYOUT_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&BuilderType);
    if (PyModule_AddObject(m, "TableFile", (PyObject *)&BuilderType) < 0) {
        Py_DECREF(&BuilderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
