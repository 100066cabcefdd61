/* msprobe's display strings of a node (tb_nodes.input_data / output_data), rendered as JSON.
 *
 * The rules are store/display_render.py's, the reference this must match byte for byte
 * (tests/store/test_display_both.py renders every fixture node with both). It is C because
 * a compare formats about four display strings per parameter on every target and golden
 * parameter; bench/results/ has what it saves.
 *
 * What stays in Python is called back: cleaning a string value (cached here), a scalar's
 * checksum and the JSON of a message list. Buffers are per call, so threads of a server may
 * render at the same time. Only CPython's public C API: attributes are read with
 * PyObject_GetAttr by interned name, whatever the class keeps them in.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* ---- configuration, set once by display.py ---------------------------------------- */

static PyObject *output_role;     /* Role.OUTPUT */
static PyObject *clean_string;    /* display.clean_string */
static PyObject *scalar_md5;      /* metrics.md5_of */
static PyObject *messages_json;   /* json.dumps */
static PyObject *summary_names;   /* tuple of str: the statistics-mode metric names, in order */
static PyObject *relative_names;  /* frozenset of str: those shown as percentages */
static PyObject *tensor_names;    /* tuple of str: the tensor-mode metric names, in order */
static PyObject *booleans;        /* {True: "True", False: "False", None: "null"} */
static PyObject *string_cache;    /* short str -> cleaned str */
static PyObject *labels;          /* Level -> its label */

#define STRING_CACHE_MAX 50000
#define STRING_CACHE_LEN 64

enum { MODE_NONE = 0, MODE_SUMMARY = 1, MODE_MD5 = 2, MODE_TENSOR = 3 };

/* Attribute names, interned once. */
static PyObject *s_key, *s_role, *s_type, *s_dtype, *s_shape, *s_max, *s_min, *s_mean, *s_norm,
    *s_requires_grad, *s_md5, *s_data_name, *s_value, *s_extra, *s_is_tensor, *s_target, *s_metrics,
    *s_requires_grad_consistent, *s_level, *s_label, *s_messages, *s_group_ranks, *s_group_id,
    *s_na, *s_unsupported;

/* ---- attributes ---------------------------------------------------------------------
 * A new reference, or NULL with an exception set: the caller releases it. */

static inline PyObject *attribute(PyObject *instance, PyObject *name) {
    return PyObject_GetAttr(instance, name);
}

/* ---- a growing byte buffer --------------------------------------------------------- */

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra) cap *= 2;
    char *data = PyMem_Realloc(b->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const char *text, Py_ssize_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->len, text, (size_t)n);
    b->len += n;
    return 0;
}

#define buf_lit(b, literal) buf_put((b), (literal), (Py_ssize_t)(sizeof(literal) - 1))

/* JSON string content, escaped as orjson escapes it (graphboard's other JSON). */
static int buf_escaped(Buf *b, const char *text, Py_ssize_t n) {
    static const char hex[] = "0123456789abcdef";
    if (buf_reserve(b, n) < 0) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c >= 0x20 && c != '"' && c != '\\') { /* room was reserved for the rest */
            b->data[b->len++] = (char)c;
            continue;
        }
        char escape[6] = {'\\', 0, 0, 0, 0, 0};
        Py_ssize_t size = 2;
        switch (c) {
            case '"': escape[1] = '"'; break;
            case '\\': escape[1] = '\\'; break;
            case '\b': escape[1] = 'b'; break;
            case '\f': escape[1] = 'f'; break;
            case '\n': escape[1] = 'n'; break;
            case '\r': escape[1] = 'r'; break;
            case '\t': escape[1] = 't'; break;
            default:
                escape[1] = 'u';
                escape[2] = '0';
                escape[3] = '0';
                escape[4] = hex[c >> 4];
                escape[5] = hex[c & 15];
                size = 6;
        }
        if (buf_reserve(b, size + (n - i)) < 0) return -1;
        memcpy(b->data + b->len, escape, (size_t)size);
        b->len += size;
    }
    return 0;
}

static int buf_escaped_str(Buf *b, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "display text must be str, not %.100s",
                     Py_TYPE(text)->tp_name);
        return -1;
    }
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &n);
    if (utf8 == NULL) return -1;
    return buf_escaped(b, utf8, n);
}

/* _floats.cpp: repr() and f"{value:.6f}" of a double. */
int graphboard_float_repr(double value, char *out);
int graphboard_float_fixed6(double value, char *out);

static int buf_float_repr(Buf *b, double value) {
    if (buf_reserve(b, 32) < 0) return -1;
    b->len += graphboard_float_repr(value, b->data + b->len);
    return 0;
}

/* A relative error as msprobe shows it: a percentage, more than 6 decimals rounded to 6;
 * exponents, inf/nan and negatives are never rounded. */
static int buf_percent(Buf *b, double fraction) {
    double percent = fraction * 100;
    char text[32];
    int length = graphboard_float_repr(percent, text);
    const char *point = memchr(text, '.', (size_t)length);
    int keep = point == NULL || memchr(text, 'e', (size_t)length) != NULL ||
               length - (point - text) - 1 <= 6 || text[0] == '-';
    if (keep) {
        if (buf_put(b, text, length) < 0) return -1;
    } else {
        if (buf_reserve(b, 340) < 0) return -1;
        b->len += graphboard_float_fixed6(percent, b->data + b->len);
    }
    return buf_lit(b, "%");
}

/* One value as msprobe shows it: floats as repr, None as null, strings cleaned, the rest str(). */
static int buf_display(Buf *b, PyObject *value) {
    if (PyFloat_CheckExact(value)) return buf_float_repr(b, PyFloat_AS_DOUBLE(value));
    if (value == Py_None) return buf_lit(b, "null");
    PyObject *text;
    if (PyUnicode_Check(value)) {
        int cacheable = PyUnicode_CheckExact(value) && PyUnicode_GET_LENGTH(value) <= STRING_CACHE_LEN;
        text = cacheable ? PyDict_GetItemWithError(string_cache, value) : NULL;
        if (text != NULL) return buf_escaped_str(b, text);
        if (PyErr_Occurred()) return -1;
        text = PyObject_CallOneArg(clean_string, value);
        if (text == NULL) return -1;
        if (cacheable && PyDict_GET_SIZE(string_cache) < STRING_CACHE_MAX &&
            PyDict_SetItem(string_cache, value, text) < 0) {
            Py_DECREF(text);
            return -1;
        }
    } else {
        text = PyObject_Str(value);
        if (text == NULL) return -1;
    }
    int result = buf_escaped_str(b, text);
    Py_DECREF(text);
    return result;
}

/* A shape as msprobe shows it: "[1, 2048, 4096]", or null. */
static int buf_shape(Buf *b, PyObject *shape) {
    if (shape == Py_None) return buf_lit(b, "null");
    if (!PyTuple_Check(shape)) {
        PyErr_Format(PyExc_TypeError, "Param.shape must be a tuple or None, not %.100s",
                     Py_TYPE(shape)->tp_name);
        return -1;
    }
    if (buf_lit(b, "[") < 0) return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        if (i && buf_lit(b, ", ") < 0) return -1;
        PyObject *item = PyTuple_GET_ITEM(shape, i);
        int overflow = 0;
        long long size = PyLong_CheckExact(item) ? PyLong_AsLongLongAndOverflow(item, &overflow) : 0;
        if (PyLong_CheckExact(item) && !overflow) {
            char digits[24];
            int at = sizeof digits;
            unsigned long long magnitude = size < 0 ? 0ULL - (unsigned long long)size : (unsigned long long)size;
            do {
                digits[--at] = (char)('0' + magnitude % 10);
                magnitude /= 10;
            } while (magnitude);
            if (size < 0) digits[--at] = '-';
            if (buf_put(b, digits + at, (Py_ssize_t)sizeof digits - at) < 0) return -1;
            continue;
        }
        PyObject *text = PyObject_Str(item);
        int result = text == NULL ? -1 : buf_escaped_str(b, text);
        Py_XDECREF(text);
        if (result < 0) return -1;
    }
    return buf_lit(b, "]");
}

/* A text field msprobe copies as it is (data_name, a tensor's md5). */
static int buf_text(Buf *b, PyObject *value) {
    if (PyUnicode_Check(value)) return buf_escaped_str(b, value);
    PyObject *text = PyObject_Str(value);
    if (text == NULL) return -1;
    int result = buf_escaped_str(b, text);
    Py_DECREF(text);
    return result;
}

/* A helper's result: shown as it is (``raw``, a shape's or a message list's text) or as a
 * value (a scalar's checksum). */
static int buf_call(Buf *b, PyObject *function, PyObject *argument, int raw) {
    PyObject *text = PyObject_CallOneArg(function, argument);
    if (text == NULL) return -1;
    int result = raw ? buf_escaped_str(b, text) : buf_display(b, text);
    Py_DECREF(text);
    return result;
}

/* ---- one parameter's fields: an ordered map with dict semantics ------------------- */

typedef struct {
    Py_ssize_t key_at, key_len, value_at, value_len;
} Field;

typedef struct {
    Buf text; /* escaped keys and values */
    Field *fields;
    Py_ssize_t count, cap;
    int has_extra; /* only a leaf's own extra fields can share a name with another field */
} Fields;

static Py_ssize_t fields_find(Fields *f, const char *key, Py_ssize_t key_len) {
    for (Py_ssize_t i = 0; i < f->count; i++) {
        Field *field = &f->fields[i];
        if (field->key_len == key_len && memcmp(f->text.data + field->key_at, key, (size_t)key_len) == 0)
            return i;
    }
    return -1;
}

/* Start a field: returns its index (a new one at the end, or the existing one with the
 * same key, whose value is replaced as dict assignment does). The caller then writes the
 * value into f->text and calls fields_end. */
static Py_ssize_t fields_begin_as(Fields *f, const char *key, Py_ssize_t key_len, int literal) {
    Py_ssize_t at = f->text.len;
    if ((literal ? buf_put(&f->text, key, key_len) : buf_escaped(&f->text, key, key_len)) < 0)
        return -1;
    Py_ssize_t escaped_len = f->text.len - at;
    Py_ssize_t index = f->has_extra ? fields_find(f, f->text.data + at, escaped_len) : -1;
    if (index >= 0) {
        f->text.len = at; /* the key is already there */
    } else {
        if (f->count == f->cap) {
            Py_ssize_t cap = f->cap ? f->cap * 2 : 32;
            Field *fields = PyMem_Realloc(f->fields, (size_t)cap * sizeof(Field));
            if (fields == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            f->fields = fields;
            f->cap = cap;
        }
        index = f->count++;
        f->fields[index].key_at = at;
        f->fields[index].key_len = escaped_len;
    }
    f->fields[index].value_at = f->text.len;
    return index;
}

/* A field named by text to escape (an extra field's or a metric's name). */
static Py_ssize_t fields_begin(Fields *f, const char *key, Py_ssize_t key_len) {
    return fields_begin_as(f, key, key_len, 0);
}

static void fields_end(Fields *f, Py_ssize_t index) {
    f->fields[index].value_len = f->text.len - f->fields[index].value_at;
}

/* A field with a literal name: write its value with ``write``, or return -1. */
#define FIELD(f, key, write)                                                      \
    do {                                                                          \
        Py_ssize_t field_index_ = fields_begin_as((f), (key), (Py_ssize_t)sizeof(key) - 1, 1); \
        if (field_index_ < 0 || (write) < 0) return -1;                           \
        fields_end((f), field_index_);                                            \
    } while (0)

static int fields_has(Fields *f, const char *key, Py_ssize_t key_len) {
    return fields_find(f, key, key_len) >= 0;
}

/* out.setdefault(key, shown value) for each extra leaf field. */
static int fields_extra(Fields *f, PyObject *extra) {
    Py_ssize_t position = 0;
    PyObject *key, *value;
    Buf escaped = {0};
    while (PyDict_Next(extra, &position, &key, &value)) {
        escaped.len = 0;
        if (buf_escaped_str(&escaped, key) < 0) goto error;
        if (fields_has(f, escaped.data, escaped.len)) continue;
        Py_ssize_t key_len;
        const char *utf8 = PyUnicode_AsUTF8AndSize(key, &key_len);
        if (utf8 == NULL) goto error;
        f->has_extra = 1;
        Py_ssize_t index = fields_begin(f, utf8, key_len);
        if (index < 0 || buf_display(&f->text, value) < 0) goto error;
        fields_end(f, index);
    }
    PyMem_Free(escaped.data);
    return 0;
error:
    PyMem_Free(escaped.data);
    return -1;
}

/* ---- the rules --------------------------------------------------------------------- */

typedef struct {
    PyObject *type, *dtype, *shape, *max, *min, *mean, *norm, *requires_grad, *md5, *data_name,
        *value, *extra;
    int is_tensor, is_null;
} ParamView;

static int extra_truthy(ParamView *p) {
    return p->extra != Py_None && PyObject_IsTrue(p->extra) == 1;
}

/* The attribute's truth value: 1, 0, or -1 with an exception set. */
static int attribute_truth(PyObject *instance, PyObject *name) {
    PyObject *value = attribute(instance, name);
    if (value == NULL) return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

static void view_release(ParamView *p) {
    Py_CLEAR(p->type);
    Py_CLEAR(p->dtype);
    Py_CLEAR(p->shape);
    Py_CLEAR(p->max);
    Py_CLEAR(p->min);
    Py_CLEAR(p->mean);
    Py_CLEAR(p->norm);
    Py_CLEAR(p->requires_grad);
    Py_CLEAR(p->md5);
    Py_CLEAR(p->data_name);
    Py_CLEAR(p->value);
    Py_CLEAR(p->extra);
}

/* The view holds a reference to each field: view_release drops them, after a failure too. */
static int view_load(ParamView *p, PyObject *param) {
    memset(p, 0, sizeof(*p));
#define LOAD(slot, name) if ((p->slot = attribute(param, name)) == NULL) return -1
    LOAD(type, s_type);
    LOAD(dtype, s_dtype);
    LOAD(shape, s_shape);
    LOAD(max, s_max);
    LOAD(min, s_min);
    LOAD(mean, s_mean);
    LOAD(norm, s_norm);
    LOAD(requires_grad, s_requires_grad);
    LOAD(md5, s_md5);
    LOAD(data_name, s_data_name);
    LOAD(value, s_value);
    LOAD(extra, s_extra);
#undef LOAD
    p->is_tensor = attribute_truth(param, s_is_tensor);
    if (p->is_tensor < 0) return -1;
    /* Param.is_null: a masked leaf */
    p->is_null = p->type == Py_None && p->value == Py_None && p->max == Py_None && !extra_truthy(p);
    return 0;
}

static int write_data_name(Fields *f, ParamView *p) {
    int truthy = PyObject_IsTrue(p->data_name);
    if (truthy < 0) return -1;
    FIELD(f, "data_name", truthy ? buf_text(&f->text, p->data_name) : buf_lit(&f->text, "-1"));
    return 0;
}

static int write_requires_grad_of_tensor(Buf *b, PyObject *value) {
    PyObject *shown = PyDict_GetItemWithError(booleans, value); /* True / False / None */
    if (shown != NULL) return buf_escaped_str(b, shown);
    if (PyErr_Occurred()) return -1;
    return buf_display(b, value);
}

static int write_statistics(Fields *f, ParamView *p) {
    FIELD(f, "Max", buf_display(&f->text, p->max));
    FIELD(f, "Min", buf_display(&f->text, p->min));
    FIELD(f, "Mean", buf_display(&f->text, p->mean));
    FIELD(f, "Norm", buf_display(&f->text, p->norm));
    return 0;
}

/* A parameter's own fields, by the kind of leaf (display.py lists them). */
static int write_param(Fields *f, ParamView *p, int keep_md5, PyObject *param) {
    if (p->is_null) {
        FIELD(f, "value", buf_lit(&f->text, "null"));
        return 0;
    }
    if (p->is_tensor) {
        FIELD(f, "type", buf_display(&f->text, p->type));
        FIELD(f, "dtype", buf_display(&f->text, p->dtype));
        FIELD(f, "shape", buf_shape(&f->text, p->shape));
        if (write_statistics(f, p) < 0) return -1;
        FIELD(f, "requires_grad", write_requires_grad_of_tensor(&f->text, p->requires_grad));
        if (keep_md5 && p->md5 != Py_None) FIELD(f, "md5", buf_text(&f->text, p->md5));
        if (write_data_name(f, p) < 0) return -1;
    } else if (extra_truthy(p) && PyDict_Check(p->extra) &&
               PyDict_Contains(p->extra, s_group_ranks) == 1) {
        /* a process group: its own fields only */
        PyObject *ranks = PyDict_GetItemWithError(p->extra, s_group_ranks);
        if (ranks == NULL) return -1;
        PyObject *group = PyDict_GetItemWithError(p->extra, s_group_id);
        if (group == NULL && PyErr_Occurred()) return -1;
        FIELD(f, "type", buf_display(&f->text, p->type));
        FIELD(f, "group_ranks", buf_display(&f->text, ranks));
        FIELD(f, "group_id", buf_display(&f->text, group != NULL ? group : Py_None));
        return write_data_name(f, p);
    } else {
        FIELD(f, "type", buf_display(&f->text, p->type));
        FIELD(f, "value", buf_display(&f->text, p->value));
        if (write_data_name(f, p) < 0) return -1;
        FIELD(f, "requires_grad", buf_display(&f->text, p->requires_grad));
        if (write_statistics(f, p) < 0) return -1;
        FIELD(f, "dtype", buf_display(&f->text, p->dtype));
        FIELD(f, "shape", buf_shape(&f->text, p->shape));
        if (keep_md5) FIELD(f, "md5", buf_call(&f->text, scalar_md5, param, 0));
    }
    if (extra_truthy(p)) {
        if (!PyDict_Check(p->extra)) {
            PyErr_SetString(PyExc_TypeError, "Param.extra must be a dict");
            return -1;
        }
        return fields_extra(f, p->extra);
    }
    return 0;
}

static int write_metric(Fields *f, PyObject *metrics, PyObject *name, PyObject *missing, int summary) {
    Py_ssize_t name_len;
    const char *key = PyUnicode_AsUTF8AndSize(name, &name_len);
    if (key == NULL) return -1;
    PyObject *value = PyDict_GetItemWithError(metrics, name);
    if (value == NULL) {
        if (PyErr_Occurred()) return -1;
        value = missing;
    }
    Py_ssize_t index = fields_begin(f, key, name_len);
    if (index < 0) return -1;
    int result;
    if (summary && PyFloat_CheckExact(value)) {
        int relative = PySet_Contains(relative_names, name);
        if (relative < 0) return -1;
        result = relative ? buf_percent(&f->text, PyFloat_AS_DOUBLE(value))
                          : buf_float_repr(&f->text, PyFloat_AS_DOUBLE(value));
    } else {
        result = buf_display(&f->text, value);
    }
    if (result < 0) return -1;
    fields_end(f, index);
    return 0;
}

/* A scored parameter's row: its metrics and verdict, assigned over the parameter's fields. */
static int write_comparison(Fields *f, PyObject *row, int mode) {
    PyObject *metrics = attribute(row, s_metrics);
    if (metrics == NULL) return -1;
    int failed = 0;
    if (!PyDict_Check(metrics)) {
        PyErr_SetString(PyExc_TypeError, "ParamRow.metrics must be a dict");
        failed = 1;
    } else if (mode == MODE_SUMMARY || mode == MODE_TENSOR) {
        PyObject *names = mode == MODE_SUMMARY ? summary_names : tensor_names;
        PyObject *missing = mode == MODE_SUMMARY ? s_na : s_unsupported;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names) && !failed; i++)
            failed = write_metric(f, metrics, PyTuple_GET_ITEM(names, i), missing, mode == MODE_SUMMARY) < 0;
    }
    Py_DECREF(metrics);
    if (failed) return -1;

    int consistent = attribute_truth(row, s_requires_grad_consistent);
    if (consistent < 0) return -1;
    PyObject *level = attribute(row, s_level);
    if (level == NULL) return -1;
    /* Level.label is a property: ask each level once */
    PyObject *label = PyDict_GetItemWithError(labels, level);
    if (label != NULL) {
        Py_INCREF(label);
    } else if (!PyErr_Occurred() && (label = PyObject_GetAttr(level, s_label)) != NULL &&
               PyDict_SetItem(labels, level, label) < 0) {
        Py_CLEAR(label);
    }
    Py_DECREF(level);
    if (label == NULL) return -1;
    Py_ssize_t index;
    int result = 0;
#define CONSISTENT() \
    if (result == 0) { \
        index = fields_begin_as(f, "Requires_grad Consistent", 24, 1); \
        result = index < 0 ? -1 : (consistent ? buf_lit(&f->text, "True") : buf_lit(&f->text, "False")); \
        if (result == 0) fields_end(f, index); \
    }
#define RESULT() \
    if (result == 0) { \
        index = fields_begin_as(f, "Result", 6, 1); \
        result = index < 0 ? -1 : buf_escaped_str(&f->text, label); \
        if (result == 0) fields_end(f, index); \
    }
    if (mode == MODE_MD5) { /* msprobe's order differs between the modes */
        RESULT();
        CONSISTENT();
    } else {
        CONSISTENT();
        RESULT();
    }
#undef CONSISTENT
#undef RESULT
    Py_DECREF(label);
    if (result < 0) return -1;

    PyObject *messages = attribute(row, s_messages);
    if (messages == NULL) return -1;
    int any = PyObject_IsTrue(messages);
    index = any < 0 ? -1 : fields_begin_as(f, "Err_message", 11, 1);
    if (index >= 0) {
        result = any ? buf_call(&f->text, messages_json, messages, 1) : buf_lit(&f->text, "[]");
        if (result == 0) fields_end(f, index);
    }
    Py_DECREF(messages);
    return index < 0 || result < 0 ? -1 : 0;
}

/* ---- a node: two JSON objects keyed by the full parameter name --------------------- */

typedef struct {
    Buf text;          /* each parameter's "{...}" */
    PyObject *keys;    /* list of parameter keys (names under the node), in first-seen order */
    PyObject *where;   /* key -> index into keys (a repeated key replaces its value) */
    Py_ssize_t *at, *len, cap;
} Side;

static int side_add(Side *side, PyObject *param_key, Fields *f) {
    Py_ssize_t start = side->text.len;
    if (buf_lit(&side->text, "{") < 0) return -1;
    for (Py_ssize_t i = 0; i < f->count; i++) {
        Field *field = &f->fields[i];
        if ((i && buf_lit(&side->text, ",") < 0) || buf_lit(&side->text, "\"") < 0 ||
            buf_put(&side->text, f->text.data + field->key_at, field->key_len) < 0 ||
            buf_lit(&side->text, "\":\"") < 0 ||
            buf_put(&side->text, f->text.data + field->value_at, field->value_len) < 0 ||
            buf_lit(&side->text, "\"") < 0)
            return -1;
    }
    if (buf_lit(&side->text, "}") < 0) return -1;
    PyObject *known = PyDict_GetItemWithError(side->where, param_key);
    Py_ssize_t index;
    if (known != NULL) {
        index = PyLong_AsSsize_t(known);
    } else {
        if (PyErr_Occurred()) return -1;
        index = PyList_GET_SIZE(side->keys);
        if (index == side->cap) {
            Py_ssize_t cap = side->cap ? side->cap * 2 : 16;
            Py_ssize_t *at = PyMem_Realloc(side->at, (size_t)cap * sizeof(Py_ssize_t));
            if (at == NULL) goto no_memory;
            side->at = at;
            Py_ssize_t *len = PyMem_Realloc(side->len, (size_t)cap * sizeof(Py_ssize_t));
            if (len == NULL) goto no_memory;
            side->len = len;
            side->cap = cap;
        }
        PyObject *number = PyLong_FromSsize_t(index);
        if (number == NULL) return -1;
        int failed = PyDict_SetItem(side->where, param_key, number) < 0 ||
                     PyList_Append(side->keys, param_key) < 0;
        Py_DECREF(number);
        if (failed) return -1;
    }
    side->at[index] = start;
    side->len[index] = side->text.len - start;
    return 0;
no_memory:
    PyErr_NoMemory();
    return -1;
}

/* {"<node>.<key>": {...}, ...}; ``prefix`` is the node's name, escaped, and a dot. */
static PyObject *side_json(Side *side, Buf *prefix) {
    Buf out = {0};
    PyObject *result = NULL;
    if (buf_lit(&out, "{") < 0) goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(side->keys); i++) {
        if ((i && buf_lit(&out, ",") < 0) || buf_lit(&out, "\"") < 0 ||
            buf_put(&out, prefix->data, prefix->len) < 0 ||
            buf_escaped_str(&out, PyList_GET_ITEM(side->keys, i)) < 0 || buf_lit(&out, "\":") < 0 ||
            buf_put(&out, side->text.data + side->at[i], side->len[i]) < 0)
            goto done;
    }
    if (buf_lit(&out, "}") < 0) goto done;
    result = PyUnicode_DecodeUTF8(out.data, out.len, "strict");
done:
    PyMem_Free(out.data);
    return result;
}

static void side_free(Side *side) {
    PyMem_Free(side->text.data);
    PyMem_Free(side->at);
    PyMem_Free(side->len);
    Py_XDECREF(side->keys);
    Py_XDECREF(side->where);
}

/* {id(row.target): id(row)} for the rows of a comparison that have a target parameter: ids,
 * which stay valid for the call because the caller's rows hold the rows and their params. */
static PyObject *rows_by_param(PyObject *rows) {
    PyObject *by_param = PyDict_New();
    if (by_param == NULL || rows == Py_None) return by_param;
    PyObject *sequence = PySequence_Fast(rows, "comparison rows must be a sequence");
    if (sequence == NULL) goto error;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(sequence); i++) {
        PyObject *row = PySequence_Fast_GET_ITEM(sequence, i);
        PyObject *target = attribute(row, s_target);
        if (target == NULL) goto error_sequence;
        if (target != Py_None) {
            PyObject *key = PyLong_FromVoidPtr(target), *value = PyLong_FromVoidPtr(row);
            int failed = key == NULL || value == NULL || PyDict_SetItem(by_param, key, value) < 0;
            Py_XDECREF(key);
            Py_XDECREF(value);
            if (failed) {
                Py_DECREF(target);
                goto error_sequence;
            }
        }
        Py_DECREF(target);
    }
    Py_DECREF(sequence);
    return by_param;
error_sequence:
    Py_DECREF(sequence);
error:
    Py_XDECREF(by_param);
    return NULL;
}

/* One parameter's fields, and its row's, added to its side. */
static int render_param(Side sides[2], Fields *fields, PyObject *param, int mode, PyObject *by_param) {
    ParamView view;
    fields->count = 0;
    fields->text.len = 0;
    fields->has_extra = 0;
    int failed = view_load(&view, param) < 0 || write_param(fields, &view, mode == MODE_MD5, param) < 0;
    int scored = !failed && !view.is_null && mode != MODE_NONE;
    view_release(&view);
    if (failed) return -1;
    if (scored) {
        PyObject *id = PyLong_FromVoidPtr(param);
        if (id == NULL) return -1;
        PyObject *row_id = PyDict_GetItemWithError(by_param, id);
        Py_DECREF(id);
        if (row_id == NULL && PyErr_Occurred()) return -1;
        if (row_id != NULL && write_comparison(fields, PyLong_AsVoidPtr(row_id), mode) < 0)
            return -1;
    }
    PyObject *key = attribute(param, s_key);
    if (key == NULL) return -1;
    PyObject *role = attribute(param, s_role);
    int result = -1;
    if (role == NULL) {
        /* the error is set */
    } else if (!PyUnicode_Check(key)) {
        PyErr_SetString(PyExc_TypeError, "Param.key must be str");
    } else {
        result = side_add(&sides[role == output_role], key, fields);
    }
    Py_DECREF(key);
    Py_XDECREF(role);
    return result;
}

static PyObject *render_node(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "render_node(params, node_name, mode, rows)");
        return NULL;
    }
    if (output_role == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "graphboard.accel._render is not configured");
        return NULL;
    }
    PyObject *params = args[0], *node_name = args[1], *rows = args[3];
    int mode = (int)PyLong_AsLong(args[2]);
    if (mode == -1 && PyErr_Occurred()) return NULL;
    if (!PyUnicode_Check(node_name)) {
        PyErr_SetString(PyExc_TypeError, "node_name must be str");
        return NULL;
    }
    Side sides[2] = {{{0}}};
    Fields fields = {{0}};
    Buf prefix = {0};
    PyObject *by_param = NULL, *sequence = NULL, *result = NULL;
    for (int s = 0; s < 2; s++) {
        sides[s].keys = PyList_New(0);
        sides[s].where = PyDict_New();
        if (sides[s].keys == NULL || sides[s].where == NULL) goto done;
    }
    if (params != Py_None) {
        by_param = rows_by_param(mode == MODE_NONE ? Py_None : rows);
        if (by_param == NULL) goto done;
        sequence = PySequence_Fast(params, "params must be a sequence");
        if (sequence == NULL) goto done;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(sequence); i++) {
            PyObject *param = PySequence_Fast_GET_ITEM(sequence, i);
            if (render_param(sides, &fields, param, mode, by_param) < 0) goto done;
        }
    }
    if (buf_escaped_str(&prefix, node_name) < 0 || buf_lit(&prefix, ".") < 0) goto done;
    PyObject *inputs = side_json(&sides[0], &prefix);
    if (inputs == NULL) goto done;
    PyObject *outputs = side_json(&sides[1], &prefix);
    if (outputs == NULL) {
        Py_DECREF(inputs);
        goto done;
    }
    result = PyTuple_Pack(2, inputs, outputs);
    Py_DECREF(inputs);
    Py_DECREF(outputs);
done:
    Py_XDECREF(sequence);
    Py_XDECREF(by_param);
    PyMem_Free(prefix.data);
    PyMem_Free(fields.text.data);
    PyMem_Free(fields.fields);
    side_free(&sides[0]);
    side_free(&sides[1]);
    return result;
}

static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *role, *clean, *md5, *messages, *summary, *relative, *tensor;
    if (!PyArg_ParseTuple(args, "OOOOO!O!O!", &role, &clean, &md5, &messages,
                          &PyTuple_Type, &summary, &PyFrozenSet_Type, &relative, &PyTuple_Type,
                          &tensor))
        return NULL;
#define KEEP(slot, value)          \
    do {                           \
        PyObject *old_ = (slot);   \
        Py_INCREF(value);          \
        (slot) = (value);          \
        Py_XDECREF(old_);          \
    } while (0)
    KEEP(output_role, role);
    KEEP(clean_string, clean);
    KEEP(scalar_md5, md5);
    KEEP(messages_json, messages);
    KEEP(summary_names, summary);
    KEEP(relative_names, relative);
    KEEP(tensor_names, tensor);
#undef KEEP
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"render_node", (PyCFunction)(void (*)(void))render_node, METH_FASTCALL,
     "render_node(params, node_name, mode, rows) -> (input_data, output_data) JSON text."},
    {"configure", configure, METH_VARARGS, "Set the Python helpers and names (display.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "graphboard.accel._render",
    "msprobe's display strings of a node, rendered as JSON (see store/display.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__render(void) {
#define INTERN(slot, text) if ((slot = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_key, "key");
    INTERN(s_role, "role");
    INTERN(s_type, "type");
    INTERN(s_dtype, "dtype");
    INTERN(s_shape, "shape");
    INTERN(s_max, "max");
    INTERN(s_min, "min");
    INTERN(s_mean, "mean");
    INTERN(s_norm, "norm");
    INTERN(s_requires_grad, "requires_grad");
    INTERN(s_md5, "md5");
    INTERN(s_data_name, "data_name");
    INTERN(s_value, "value");
    INTERN(s_extra, "extra");
    INTERN(s_is_tensor, "is_tensor");
    INTERN(s_target, "target");
    INTERN(s_metrics, "metrics");
    INTERN(s_requires_grad_consistent, "requires_grad_consistent");
    INTERN(s_level, "level");
    INTERN(s_label, "label");
    INTERN(s_messages, "messages");
    INTERN(s_group_ranks, "group_ranks");
    INTERN(s_group_id, "group_id");
    INTERN(s_na, "N/A");
    INTERN(s_unsupported, "unsupported");
#undef INTERN
    booleans = PyDict_New();
    string_cache = PyDict_New();
    labels = PyDict_New();
    if (booleans == NULL || string_cache == NULL || labels == NULL) return NULL;
    PyObject *yes = PyUnicode_FromString("True"), *no = PyUnicode_FromString("False"),
             *null = PyUnicode_FromString("null");
    int failed = yes == NULL || no == NULL || null == NULL ||
                 PyDict_SetItem(booleans, Py_True, yes) < 0 ||
                 PyDict_SetItem(booleans, Py_False, no) < 0 ||
                 PyDict_SetItem(booleans, Py_None, null) < 0;
    Py_XDECREF(yes);
    Py_XDECREF(no);
    Py_XDECREF(null);
    if (failed) return NULL;
    return PyModule_Create(&module_def);
}
