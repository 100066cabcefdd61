/* The hot path of records.parse_record: a record's sections and their tensor leaves.
 *
 * records.py holds the rules and documents them; this applies the rule for the one case that
 * makes up almost every parameter of a dump, a tensor leaf ({"type": str, "dtype" or
 * "shape", ...}) directly in a list or object section, and hands everything else back to
 * records._flatten, item by item. A section that is neither a list nor an object makes the
 * whole record go back to Python, which reports it. Reading a 27k-record dump.json spent
 * ~0.25 s building its 55k Params in Python, on the critical path of a compare.
 *
 * A Param is a slotted dataclass without __post_init__: it is allocated and its slots are
 * filled here, as its __init__ would fill them, without running the __init__.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>
#include <structmember.h>

enum {
    F_KEY, F_ROLE, F_TYPE, F_DTYPE, F_SHAPE, F_MAX, F_MIN, F_MEAN, F_NORM, F_REQUIRES_GRAD,
    F_MD5, F_DATA_NAME, F_VALUE, F_EXTRA, F_IS_TENSOR, F_COUNT
};
static const char *field_names[F_COUNT] = {
    "key", "role", "type", "dtype", "shape", "max", "min", "mean", "norm", "requires_grad",
    "md5", "data_name", "value", "extra", "is_tensor",
};

static PyTypeObject *param_type;
static Py_ssize_t offsets[F_COUNT];
static PyObject *sections;    /* tuple of (section name, role, prefix) */
static PyObject *leaf_fields; /* frozenset of the leaf fields a Param holds */
static PyObject *flatten;     /* records._flatten */
static PyObject *shapes;      /* records._shapes: one tuple per distinct shape */
static PyObject *index_keys;  /* dict (prefix, index) -> interned "prefix.index" */
static PyObject *roles;       /* tuple of the Role members, as pack_params numbers them */

static PyObject *s_type, *s_dtype, *s_shape, *s_max, *s_min, *s_mean, *s_norm,
    *s_requires_grad, *s_md5, *s_data_name, *one;

static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *type, *fields_set, *flatten_fn, *shape_cache, *section_table, *role_table;
    if (!PyArg_ParseTuple(args, "O!O!OO!O!O!", &PyType_Type, &type, &PyFrozenSet_Type, &fields_set,
                          &flatten_fn, &PyDict_Type, &shape_cache, &PyTuple_Type, &section_table,
                          &PyTuple_Type, &role_table))
        return NULL;
    if (PyTuple_GET_SIZE(role_table) > 255) {
        PyErr_SetString(PyExc_ValueError, "at most 255 roles");
        return NULL;
    }
    for (int f = 0; f < F_COUNT; f++) {
        PyObject *name = PyUnicode_InternFromString(field_names[f]);
        if (name == NULL) return NULL;
        PyObject *descriptor = _PyType_Lookup((PyTypeObject *)type, name);
        Py_DECREF(name);
        if (descriptor == NULL || !Py_IS_TYPE(descriptor, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)descriptor)->d_member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "Param.%s is not a slot", field_names[f]);
            return NULL;
        }
        offsets[f] = ((PyMemberDescrObject *)descriptor)->d_member->offset;
    }
    Py_XSETREF(param_type, (PyTypeObject *)Py_NewRef(type));
    Py_XSETREF(leaf_fields, Py_NewRef(fields_set));
    Py_XSETREF(flatten, Py_NewRef(flatten_fn));
    Py_XSETREF(shapes, Py_NewRef(shape_cache));
    Py_XSETREF(sections, Py_NewRef(section_table));
    Py_XSETREF(roles, Py_NewRef(role_table));
    if (index_keys == NULL && (index_keys = PyDict_New()) == NULL) return NULL;
    Py_RETURN_NONE;
}

/* "prefix.index", interned, cached per (prefix, index). */
static PyObject *list_key(PyObject *prefix, Py_ssize_t index) {
    PyObject *number = PyLong_FromSsize_t(index);
    if (number == NULL) return NULL;
    PyObject *pair = PyTuple_Pack(2, prefix, number);
    Py_DECREF(number);
    if (pair == NULL) return NULL;
    PyObject *key = PyDict_GetItemWithError(index_keys, pair);
    if (key != NULL) {
        Py_DECREF(pair);
        return Py_NewRef(key);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(pair);
        return NULL;
    }
    key = PyUnicode_FromFormat("%U.%zd", prefix, index);
    if (key != NULL) {
        PyUnicode_InternInPlace(&key);
        if (PyDict_SetItem(index_keys, pair, key) < 0) Py_CLEAR(key);
    }
    Py_DECREF(pair);
    return key;
}

static PyObject *dict_key(PyObject *prefix, PyObject *name) {
    PyObject *key = PyUnicode_FromFormat("%U.%S", prefix, name);
    if (key != NULL) PyUnicode_InternInPlace(&key);
    return key;
}

/* Tensor statistics read as text so far: a caller scans its records for them only when the
 * count moved while it parsed (records.text_statistics_read). Never reset, so parses in
 * other threads can only make a caller scan for nothing, never miss its own. */
static Py_ssize_t text_statistics;

/* records._tensor_stat: numbers, None, booleans and strings as they are, the rest as text. */
static PyObject *tensor_stat(PyObject *value) {
    if (value == NULL || value == Py_None) return Py_NewRef(Py_None);
    if (PyFloat_Check(value) || PyLong_Check(value)) return Py_NewRef(value);
    text_statistics++;
    if (PyUnicode_Check(value)) return Py_NewRef(value);
    return PyObject_Str(value);
}

static PyObject *text_statistics_read(PyObject *module, PyObject *unused) {
    return PyLong_FromSsize_t(text_statistics);
}

/* count_line_starts(text, prefix): how many lines after the first start with prefix, i.e.
 * text.count(b"\n" + prefix) for a prefix without a newline; memchr finds the newlines. */
static PyObject *count_line_starts(PyObject *module, PyObject *args) {
    Py_buffer text, prefix;
    if (!PyArg_ParseTuple(args, "y*y*", &text, &prefix)) return NULL;
    if (memchr(prefix.buf, '\n', (size_t)prefix.len) != NULL) {
        PyBuffer_Release(&text);
        PyBuffer_Release(&prefix);
        PyErr_SetString(PyExc_ValueError, "the prefix holds a newline");
        return NULL;
    }
    Py_ssize_t count = 0;
    const char *at = text.buf, *end = (const char *)text.buf + text.len;
    while ((at = memchr(at, '\n', (size_t)(end - at))) != NULL) {
        at++;
        if (end - at >= prefix.len && memcmp(at, prefix.buf, (size_t)prefix.len) == 0) count++;
    }
    PyBuffer_Release(&text);
    PyBuffer_Release(&prefix);
    return PyLong_FromSsize_t(count);
}

/* records._shape */
static PyObject *shape_of(PyObject *value) {
    if (value == NULL || value == Py_None) return Py_NewRef(Py_None);
    PyObject *key = PyList_Check(value) ? PyList_AsTuple(value) : PyTuple_Pack(1, value);
    if (key == NULL) return NULL;
    PyObject *known = PyDict_SetDefault(shapes, key, key); /* borrowed */
    Py_XINCREF(known);
    Py_DECREF(key);
    return known;
}

static int set_field(PyObject *param, int field, PyObject *value /* stolen */) {
    if (value == NULL) return -1;
    *(PyObject **)((char *)param + offsets[field]) = value;
    return 0;
}

/* A tensor leaf as records._leaf builds it. */
static PyObject *tensor_param(PyObject *key, PyObject *role, PyObject *leaf) {
    PyObject *extra = NULL;
    PyObject *name, *value;
    Py_ssize_t position = 0;
    while (PyDict_Next(leaf, &position, &name, &value)) {
        int known = PySet_Contains(leaf_fields, name);
        if (known < 0) goto fail;
        if (known) continue;
        if (extra == NULL && (extra = PyDict_New()) == NULL) goto fail;
        if (PyDict_SetItem(extra, name, value) < 0) goto fail;
    }
    PyObject *dtype = PyDict_GetItemWithError(leaf, s_dtype);
    if (dtype != NULL && PyUnicode_CheckExact(dtype)) {
        Py_INCREF(dtype);
        PyUnicode_InternInPlace(&dtype);
    } else {
        if (dtype == NULL && PyErr_Occurred()) goto fail;
        dtype = Py_NewRef(dtype != NULL ? dtype : Py_None);
    }
    PyObject *param = param_type->tp_alloc(param_type, 0);
    if (param == NULL) {
        Py_DECREF(dtype);
        goto fail;
    }
#define GET(s) PyDict_GetItemWithError(leaf, s)
#define OR_NONE(v) Py_NewRef((v) != NULL ? (v) : Py_None)
    set_field(param, F_EXTRA, extra != NULL ? extra : Py_NewRef(Py_None)); /* the param owns it now */
    extra = NULL;
    if (set_field(param, F_KEY, Py_NewRef(key)) < 0 || set_field(param, F_ROLE, Py_NewRef(role)) < 0 ||
        set_field(param, F_TYPE, OR_NONE(GET(s_type))) < 0 || set_field(param, F_DTYPE, dtype) < 0 ||
        set_field(param, F_SHAPE, shape_of(GET(s_shape))) < 0 ||
        set_field(param, F_MAX, tensor_stat(GET(s_max))) < 0 ||
        set_field(param, F_MIN, tensor_stat(GET(s_min))) < 0 ||
        set_field(param, F_MEAN, tensor_stat(GET(s_mean))) < 0 ||
        set_field(param, F_NORM, tensor_stat(GET(s_norm))) < 0 ||
        set_field(param, F_REQUIRES_GRAD, OR_NONE(GET(s_requires_grad))) < 0 ||
        set_field(param, F_MD5, OR_NONE(GET(s_md5))) < 0 ||
        set_field(param, F_DATA_NAME, OR_NONE(GET(s_data_name))) < 0 ||
        set_field(param, F_VALUE, Py_NewRef(Py_None)) < 0 ||
        set_field(param, F_IS_TENSOR, Py_NewRef(Py_True)) < 0) {
        Py_DECREF(param); /* its dealloc frees the fields set */
        return NULL;
    }
#undef GET
#undef OR_NONE
    if (PyErr_Occurred()) { /* a lookup that failed on an unhashable key cannot happen here */
        Py_DECREF(param);
        return NULL;
    }
    return param;
fail:
    Py_XDECREF(extra);
    return NULL;
}

static int is_tensor_leaf(PyObject *item) {
    if (!PyDict_CheckExact(item)) return 0;
    PyObject *kind = PyDict_GetItemWithError(item, s_type);
    if (kind == NULL || !PyUnicode_CheckExact(kind)) return 0;
    return PyDict_GetItemWithError(item, s_dtype) != NULL || PyDict_GetItemWithError(item, s_shape) != NULL;
}

static int add_item(PyObject *params, PyObject *key, PyObject *role, PyObject *item, PyObject *path,
                    PyObject *name) {
    if (is_tensor_leaf(item)) {
        PyObject *param = tensor_param(key, role, item);
        if (param == NULL) return -1;
        int failed = PyList_Append(params, param);
        Py_DECREF(param);
        return failed;
    }
    if (PyErr_Occurred()) return -1;
    /* records._flatten(value, key, role, out, depth, grad, path, node) */
    PyObject *result = PyObject_CallFunctionObjArgs(flatten, item, key, role, params, one, Py_False,
                                                    path, name, NULL);
    if (result == NULL) return -1;
    Py_DECREF(result);
    return 0;
}

/* parse_sections(record, path, name) -> list of Param, or None for records.py to parse. */
static PyObject *parse_sections(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "parse_sections(record, path, name)");
        return NULL;
    }
    PyObject *record = args[0], *path = args[1], *name = args[2];
    if (param_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_records.configure was not called");
        return NULL;
    }
    if (!PyDict_CheckExact(record)) Py_RETURN_NONE;
    PyObject *params = PyList_New(0);
    if (params == NULL) return NULL;
    for (Py_ssize_t s = 0; s < PyTuple_GET_SIZE(sections); s++) {
        PyObject *entry = PyTuple_GET_ITEM(sections, s);
        PyObject *section = PyTuple_GET_ITEM(entry, 0), *role = PyTuple_GET_ITEM(entry, 1),
                 *prefix = PyTuple_GET_ITEM(entry, 2);
        PyObject *value = PyDict_GetItemWithError(record, section);
        if (value == NULL) {
            if (PyErr_Occurred()) goto fail;
            continue;
        }
        if (value == Py_None) continue;
        if (PyList_CheckExact(value)) {
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
                PyObject *key = list_key(prefix, i);
                if (key == NULL) goto fail;
                int failed = add_item(params, key, role, PyList_GET_ITEM(value, i), path, name);
                Py_DECREF(key);
                if (failed) goto fail;
            }
        } else if (PyDict_CheckExact(value)) {
            PyObject *item_name, *item;
            Py_ssize_t position = 0;
            while (PyDict_Next(value, &position, &item_name, &item)) {
                PyObject *key = dict_key(prefix, item_name);
                if (key == NULL) goto fail;
                int failed = add_item(params, key, role, item, path, name);
                Py_DECREF(key);
                if (failed) goto fail;
            }
        } else { /* records.py reports it */
            Py_DECREF(params);
            Py_RETURN_NONE;
        }
    }
    return params;
fail:
    Py_DECREF(params);
    return NULL;
}

/* count_keys(text, depth): how many object keys the JSON text holds at nesting depth depth
 * (1: the top-level object's), whatever its layout: a string followed by ':' is a key, and
 * only strings and brackets change what follows. The text is valid JSON, parsed already. */
static PyObject *count_keys(PyObject *module, PyObject *args) {
    Py_buffer text;
    Py_ssize_t depth;
    if (!PyArg_ParseTuple(args, "y*n", &text, &depth)) return NULL;
    const unsigned char *at = text.buf, *end = (const unsigned char *)text.buf + text.len;
    Py_ssize_t level = 0, count = 0;
    while (at < end) {
        unsigned char c = *at++;
        if (c == '"') {
            for (;;) { /* to the closing quote: one after an even run of backslashes */
                const unsigned char *quote = memchr(at, '"', (size_t)(end - at));
                if (quote == NULL) {
                    at = end;
                    break;
                }
                const unsigned char *run = quote;
                while (run > at && run[-1] == '\\') run--;
                at = quote + 1;
                if (((quote - run) & 1) == 0) break;
            }
            if (level == depth) {
                while (at < end && (*at == ' ' || *at == '\n' || *at == '\r' || *at == '\t')) at++;
                if (at < end && *at == ':') count++;
            }
        } else if (c == '{' || c == '[') {
            level++;
        } else if (c == '}' || c == ']') {
            level--;
        }
    }
    PyBuffer_Release(&text);
    return PyLong_FromSsize_t(count);
}

/* ---- handing records to another process ----------------------------------------------
 * A compare's writing process parses the golden dump.json and hands its Params to the
 * reading process. Pickled as tuples and rebuilt through Param's __init__ that cost both
 * processes as much as parsing a third of the file again (at a million records, 5.5 s to
 * send and 3.6 s to take, on the critical path). pack_params writes each Param's fields as
 * tagged values, every distinct string once (later uses refer back to it); unpack_params
 * fills new Params' slots from that. Values JSON can hold beyond those Params usually carry
 * (the odd leaf's value or extra fields) go through marshal. */

enum {
    V_NONE, V_TRUE, V_FALSE, V_FLOAT, V_INT, V_TEXT, V_TEXT_AGAIN, V_TUPLE, V_ROLE, V_MARSHAL
};

typedef struct {
    PyObject *bytes; /* grown as needed, cut to size at the end */
    Py_ssize_t size;
    PyObject *texts; /* dict str -> its number */
} Packer;

static char *pack_room(Packer *p, Py_ssize_t n) {
    Py_ssize_t capacity = PyBytes_GET_SIZE(p->bytes);
    if (p->size + n > capacity) {
        while (p->size + n > capacity) capacity *= 2;
        if (_PyBytes_Resize(&p->bytes, capacity) < 0) return NULL;
    }
    char *at = PyBytes_AS_STRING(p->bytes) + p->size;
    p->size += n;
    return at;
}

static int pack_count(Packer *p, size_t n) { /* a varint */
    char *at = pack_room(p, 10);
    if (at == NULL) return -1;
    Py_ssize_t used = 0;
    do {
        unsigned char byte = n & 0x7f;
        n >>= 7;
        at[used++] = (char)(byte | (n ? 0x80 : 0));
    } while (n);
    p->size -= 10 - used;
    return 0;
}

static int pack_tag(Packer *p, int tag, const void *body, Py_ssize_t n) {
    char *at = pack_room(p, 1 + n);
    if (at == NULL) return -1;
    at[0] = (char)tag;
    if (n) memcpy(at + 1, body, (size_t)n);
    return 0;
}

static int pack_value(Packer *p, PyObject *value) {
    if (value == Py_None) return pack_tag(p, V_NONE, NULL, 0);
    if (value == Py_True) return pack_tag(p, V_TRUE, NULL, 0);
    if (value == Py_False) return pack_tag(p, V_FALSE, NULL, 0);
    if (PyFloat_CheckExact(value)) {
        double d = PyFloat_AS_DOUBLE(value);
        return pack_tag(p, V_FLOAT, &d, 8);
    }
    if (PyUnicode_CheckExact(value)) {
        PyObject *known = PyDict_GetItemWithError(p->texts, value);
        if (known != NULL) {
            if (pack_tag(p, V_TEXT_AGAIN, NULL, 0) < 0) return -1;
            return pack_count(p, PyLong_AsSize_t(known));
        }
        if (PyErr_Occurred()) return -1;
        PyObject *number = PyLong_FromSsize_t(PyDict_GET_SIZE(p->texts));
        if (number == NULL || PyDict_SetItem(p->texts, value, number) < 0) {
            Py_XDECREF(number);
            return -1;
        }
        Py_DECREF(number);
        Py_ssize_t length;
        const char *text = PyUnicode_AsUTF8AndSize(value, &length);
        if (text == NULL || pack_tag(p, V_TEXT, NULL, 0) < 0 || pack_count(p, (size_t)length) < 0)
            return -1;
        char *at = pack_room(p, length);
        if (at == NULL) return -1;
        memcpy(at, text, (size_t)length);
        return 0;
    }
    if (PyLong_CheckExact(value)) {
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (n == -1 && PyErr_Occurred()) return -1;
        if (!overflow) return pack_tag(p, V_INT, &n, 8);
    } else if (PyTuple_CheckExact(value)) {
        if (pack_tag(p, V_TUPLE, NULL, 0) < 0 || pack_count(p, (size_t)PyTuple_GET_SIZE(value)) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value); i++)
            if (pack_value(p, PyTuple_GET_ITEM(value, i)) < 0) return -1;
        return 0;
    } else {
        for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(roles); r++) {
            if (value == PyTuple_GET_ITEM(roles, r)) {
                unsigned char number = (unsigned char)r;
                return pack_tag(p, V_ROLE, &number, 1);
            }
        }
    }
    PyObject *blob = PyMarshal_WriteObjectToString(value, Py_MARSHAL_VERSION);
    if (blob == NULL) return -1;
    int failed = pack_tag(p, V_MARSHAL, NULL, 0) < 0 || pack_count(p, (size_t)PyBytes_GET_SIZE(blob)) < 0;
    char *at = failed ? NULL : pack_room(p, PyBytes_GET_SIZE(blob));
    if (at != NULL) memcpy(at, PyBytes_AS_STRING(blob), (size_t)PyBytes_GET_SIZE(blob));
    Py_DECREF(blob);
    return at == NULL ? -1 : 0;
}

/* pack_params({name: [Param, ...]}) -> bytes */
static PyObject *pack_params(PyObject *module, PyObject *records) {
    if (param_type == NULL || !PyDict_CheckExact(records)) {
        PyErr_SetString(PyExc_TypeError, "pack_params({name: [Param, ...]}), once configured");
        return NULL;
    }
    Packer p = {PyBytes_FromStringAndSize(NULL, 1 << 16), 0, PyDict_New()};
    if (p.bytes == NULL || p.texts == NULL) goto fail;
    if (pack_count(&p, (size_t)PyDict_GET_SIZE(records)) < 0) goto fail;
    PyObject *name, *params;
    Py_ssize_t position = 0;
    while (PyDict_Next(records, &position, &name, &params)) {
        if (!PyList_CheckExact(params)) {
            PyErr_Format(PyExc_TypeError, "the Params of %R: expected a list", name);
            goto fail;
        }
        if (pack_value(&p, name) < 0 || pack_count(&p, (size_t)PyList_GET_SIZE(params)) < 0) goto fail;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(params); i++) {
            PyObject *param = PyList_GET_ITEM(params, i);
            if (!Py_IS_TYPE(param, param_type)) {
                PyErr_Format(PyExc_TypeError, "a Param of %R is a %s", name, Py_TYPE(param)->tp_name);
                goto fail;
            }
            for (int f = 0; f < F_COUNT; f++) {
                PyObject *value = *(PyObject **)((char *)param + offsets[f]);
                if (value == NULL) {
                    PyErr_Format(PyExc_ValueError, "a Param of %R has no %s", name, field_names[f]);
                    goto fail;
                }
                if (pack_value(&p, value) < 0) goto fail;
            }
        }
    }
    Py_DECREF(p.texts);
    if (_PyBytes_Resize(&p.bytes, p.size) < 0) return NULL;
    return p.bytes;
fail:
    Py_XDECREF(p.bytes);
    Py_XDECREF(p.texts);
    return NULL;
}

typedef struct {
    const unsigned char *at, *end;
    PyObject *texts; /* list: the strings so far, by number */
} Unpacker;

static int truncated(void) {
    PyErr_SetString(PyExc_ValueError, "packed Params end too soon, or hold an unknown tag");
    return -1;
}

static int unpack_count(Unpacker *u, size_t *n) {
    size_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (u->at == u->end) return truncated();
        unsigned char byte = *u->at++;
        value |= (size_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *n = value;
            return 0;
        }
    }
    return truncated();
}

static PyObject *unpack_value(Unpacker *u, int intern) {
    if (u->at == u->end) return truncated(), NULL;
    int tag = *u->at++;
    size_t n;
    switch (tag) {
    case V_NONE: return Py_NewRef(Py_None);
    case V_TRUE: return Py_NewRef(Py_True);
    case V_FALSE: return Py_NewRef(Py_False);
    case V_FLOAT:
    case V_INT: {
        if (u->end - u->at < 8) return truncated(), NULL;
        char body[8];
        memcpy(body, u->at, 8);
        u->at += 8;
        if (tag == V_INT) {
            long long integer;
            memcpy(&integer, body, 8);
            return PyLong_FromLongLong(integer);
        }
        double d;
        memcpy(&d, body, 8);
        return PyFloat_FromDouble(d);
    }
    case V_TEXT: {
        if (unpack_count(u, &n) < 0) return NULL;
        if ((size_t)(u->end - u->at) < n) return truncated(), NULL;
        PyObject *text = PyUnicode_DecodeUTF8((const char *)u->at, (Py_ssize_t)n, "strict");
        u->at += n;
        if (text == NULL) return NULL;
        if (intern) PyUnicode_InternInPlace(&text);
        if (PyList_Append(u->texts, text) < 0) Py_CLEAR(text);
        return text;
    }
    case V_TEXT_AGAIN:
        if (unpack_count(u, &n) < 0) return NULL;
        if (n >= (size_t)PyList_GET_SIZE(u->texts)) return truncated(), NULL;
        return Py_NewRef(PyList_GET_ITEM(u->texts, (Py_ssize_t)n));
    case V_TUPLE: {
        if (unpack_count(u, &n) < 0) return NULL;
        if ((size_t)(u->end - u->at) < n) return truncated(), NULL;
        PyObject *tuple = PyTuple_New((Py_ssize_t)n);
        if (tuple == NULL) return NULL;
        for (size_t i = 0; i < n; i++) {
            PyObject *item = unpack_value(u, 0);
            if (item == NULL) {
                Py_DECREF(tuple);
                return NULL;
            }
            PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, item);
        }
        return tuple;
    }
    case V_ROLE:
        if (u->at == u->end || *u->at >= PyTuple_GET_SIZE(roles)) return truncated(), NULL;
        return Py_NewRef(PyTuple_GET_ITEM(roles, *u->at++));
    case V_MARSHAL: {
        if (unpack_count(u, &n) < 0) return NULL;
        if ((size_t)(u->end - u->at) < n) return truncated(), NULL;
        PyObject *value = PyMarshal_ReadObjectFromString((const char *)u->at, (Py_ssize_t)n);
        u->at += n;
        return value;
    }
    }
    return truncated(), NULL;
}

/* A shape as records._shape keeps it: one tuple per distinct shape. */
static PyObject *shared_shape(PyObject *shape /* stolen */) {
    if (shape == NULL || !PyTuple_CheckExact(shape)) return shape;
    PyObject *known = PyDict_SetDefault(shapes, shape, shape); /* borrowed */
    Py_XINCREF(known);
    Py_DECREF(shape);
    return known;
}

/* unpack_params(bytes) -> {name: [Param, ...]}, the dict pack_params was given */
static PyObject *unpack_params(PyObject *module, PyObject *packed) {
    if (param_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_records.configure was not called");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(packed, &view, PyBUF_SIMPLE) < 0) return NULL;
    Unpacker u = {view.buf, (const unsigned char *)view.buf + view.len, PyList_New(0)};
    PyObject *records = PyDict_New();
    size_t count;
    if (u.texts == NULL || records == NULL || unpack_count(&u, &count) < 0) goto fail;
    for (size_t r = 0; r < count; r++) {
        PyObject *name = unpack_value(&u, 0);
        size_t length;
        if (name == NULL) goto fail;
        PyObject *params = unpack_count(&u, &length) < 0 ? NULL : PyList_New(0);
        if (params == NULL || PyDict_SetItem(records, name, params) < 0) {
            Py_DECREF(name);
            Py_XDECREF(params);
            goto fail;
        }
        Py_DECREF(name);
        Py_DECREF(params); /* the dict holds it */
        for (size_t i = 0; i < length; i++) {
            PyObject *param = param_type->tp_alloc(param_type, 0);
            if (param == NULL) goto fail;
            for (int f = 0; f < F_COUNT; f++) {
                PyObject *value = unpack_value(&u, f == F_KEY || f == F_DTYPE);
                if (f == F_SHAPE) value = shared_shape(value);
                if (set_field(param, f, value) < 0) {
                    Py_DECREF(param);
                    goto fail;
                }
            }
            int failed = PyList_Append(params, param);
            Py_DECREF(param);
            if (failed) goto fail;
        }
    }
    if (u.at != u.end) {
        truncated();
        goto fail;
    }
    PyBuffer_Release(&view);
    Py_DECREF(u.texts);
    return records;
fail:
    PyBuffer_Release(&view);
    Py_XDECREF(u.texts);
    Py_XDECREF(records);
    return NULL;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Param, leaf_fields, flatten, shapes, sections, roles): set once by records.py"},
    {"pack_params", pack_params, METH_O, "pack_params({name: [Param, ...]}) -> bytes"},
    {"unpack_params", unpack_params, METH_O, "unpack_params(bytes) -> {name: [Param, ...]}"},
    {"parse_sections", (PyCFunction)(void (*)(void))parse_sections, METH_FASTCALL,
     "parse_sections(record, path, name): the record's Params, or None for records.py"},
    {"text_statistics_read", text_statistics_read, METH_NOARGS,
     "text_statistics_read(): how many tensor statistics were read as text so far"},
    {"count_keys", count_keys, METH_VARARGS,
     "count_keys(text, depth): the JSON text's object keys at that depth (1: top level)"},
    {"count_line_starts", count_line_starts, METH_VARARGS,
     "count_line_starts(text, prefix): text.count(b'\\n' + prefix), prefix without a newline"},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_records", "The hot path of dump.json record parsing.", -1, methods,
};

PyMODINIT_FUNC PyInit__records(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_type, "type");
    INTERN(s_dtype, "dtype");
    INTERN(s_shape, "shape");
    INTERN(s_max, "Max");
    INTERN(s_min, "Min");
    INTERN(s_mean, "Mean");
    INTERN(s_norm, "Norm");
    INTERN(s_requires_grad, "requires_grad");
    INTERN(s_md5, "md5");
    INTERN(s_data_name, "data_name");
#undef INTERN
    if ((one = PyLong_FromLong(1)) == NULL) return NULL;
    return PyModule_Create(&module);
}
