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

static PyObject *s_type, *s_dtype, *s_shape, *s_max, *s_min, *s_mean, *s_norm,
    *s_requires_grad, *s_md5, *s_data_name, *one;

static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *type, *fields_set, *flatten_fn, *shape_cache, *section_table;
    if (!PyArg_ParseTuple(args, "O!O!OO!O!", &PyType_Type, &type, &PyFrozenSet_Type, &fields_set,
                          &flatten_fn, &PyDict_Type, &shape_cache, &PyTuple_Type, &section_table))
        return NULL;
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

/* records._tensor_stat: numbers, None, booleans and strings as they are, the rest as text. */
static PyObject *tensor_stat(PyObject *value) {
    if (value == NULL || value == Py_None) return Py_NewRef(Py_None);
    if (PyFloat_Check(value) || PyLong_Check(value) || PyUnicode_Check(value)) return Py_NewRef(value);
    return PyObject_Str(value);
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

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Param, leaf_fields, flatten, shapes, sections): set once by records.py"},
    {"parse_sections", (PyCFunction)(void (*)(void))parse_sections, METH_FASTCALL,
     "parse_sections(record, path, name): the record's Params, or None for records.py"},
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
