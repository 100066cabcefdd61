/* metrics.summary_metrics in C: the differences and relative errors of Max, Min, Mean and
 * Norm of one parameter pair.
 *
 * It runs once per compared parameter (55k times for a 27k-record pair, 2M at a million
 * records), and in Python it was a fifth of scoring. metrics.py keeps the rule, in
 * ``_difference``; this computes it the same way: two floats (nearly always) with C doubles,
 * which is what Python's float arithmetic does, and anything else through Python's own
 * number protocol, so two integer statistics still differ by an integer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

static PyObject *names;  /* metrics.SUMMARY_METRIC_NAMES: 4 differences, 4 relative errors */
static PyObject *na, *nan_marker; /* "N/A", "Nan" */
static PyObject *s_max, *s_min, *s_mean, *s_norm, *zero;

static int is_number(PyObject *value) {
    return (PyFloat_Check(value) || PyLong_Check(value)) && !PyBool_Check(value);
}

/* (difference, relative error) of one statistic, as metrics._difference; new references. */
static int difference(PyObject *npu, PyObject *bench, PyObject **diff_out, PyObject **relative_out) {
    if (PyFloat_CheckExact(npu) && PyFloat_CheckExact(bench)) {
        double a = PyFloat_AS_DOUBLE(npu), b = PyFloat_AS_DOUBLE(bench), d = a - b;
        if (isnan(d)) {
            *diff_out = Py_NewRef(nan_marker);
            *relative_out = Py_NewRef(nan_marker);
            return 0;
        }
        *diff_out = PyFloat_FromDouble(d);
        *relative_out = b != 0.0 ? PyFloat_FromDouble(fabs(d / b)) : Py_NewRef(na);
        if (*diff_out == NULL || *relative_out == NULL) {
            Py_CLEAR(*diff_out);
            Py_CLEAR(*relative_out);
            return -1;
        }
        return 0;
    }
    if (!is_number(npu) || !is_number(bench)) {
        *diff_out = Py_NewRef(na);
        *relative_out = Py_NewRef(na);
        return 0;
    }
    PyObject *diff = PyNumber_Subtract(npu, bench);
    if (diff == NULL) return -1;
    /* diff != diff, asked of the object: RichCompareBool would answer "equal" for the same
     * object without asking, and NaN is not equal to itself */
    PyObject *unequal = PyObject_RichCompare(diff, diff, Py_NE);
    int is_nan = unequal == NULL ? -1 : PyObject_IsTrue(unequal);
    Py_XDECREF(unequal);
    if (is_nan < 0) goto fail;
    if (is_nan) {
        Py_DECREF(diff);
        *diff_out = Py_NewRef(nan_marker);
        *relative_out = Py_NewRef(nan_marker);
        return 0;
    }
    int nonzero = PyObject_RichCompareBool(bench, zero, Py_NE);
    if (nonzero < 0) goto fail;
    PyObject *relative;
    if (nonzero) {
        PyObject *as_float = PyNumber_Float(bench);
        PyObject *ratio = as_float == NULL ? NULL : PyNumber_TrueDivide(diff, as_float);
        Py_XDECREF(as_float);
        relative = ratio == NULL ? NULL : PyNumber_Absolute(ratio);
        Py_XDECREF(ratio);
        if (relative == NULL) goto fail;
    } else {
        relative = Py_NewRef(na);
    }
    *diff_out = diff;
    *relative_out = relative;
    return 0;
fail:
    Py_DECREF(diff);
    return -1;
}

/* The statistic ``name`` of a Param, or None for a missing Param. */
static PyObject *statistic(PyObject *param, PyObject *name) {
    return param == Py_None ? Py_NewRef(Py_None) : PyObject_GetAttr(param, name);
}

/* summary_metrics(target, golden) -> {name: metric}, in metrics.summary_metrics' order */
static PyObject *summary_metrics(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || names == NULL) {
        PyErr_SetString(PyExc_TypeError, "summary_metrics(target, golden), once configured");
        return NULL;
    }
    PyObject *fields[4] = {s_max, s_min, s_mean, s_norm};
    PyObject *result = PyDict_New();
    if (result == NULL) return NULL;
    for (int f = 0; f < 4; f++) {
        PyObject *npu = statistic(args[0], fields[f]), *bench = statistic(args[1], fields[f]);
        PyObject *diff = NULL, *relative = NULL;
        int failed = npu == NULL || bench == NULL || difference(npu, bench, &diff, &relative) < 0 ||
                     PyDict_SetItem(result, PyTuple_GET_ITEM(names, f), diff) < 0 ||
                     PyDict_SetItem(result, PyTuple_GET_ITEM(names, 4 + f), relative) < 0;
        Py_XDECREF(npu);
        Py_XDECREF(bench);
        Py_XDECREF(diff);
        Py_XDECREF(relative);
        if (failed) {
            Py_DECREF(result);
            return NULL;
        }
    }
    return result;
}

static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *metric_names, *na_text, *nan_text;
    if (!PyArg_ParseTuple(args, "O!UU", &PyTuple_Type, &metric_names, &na_text, &nan_text)) return NULL;
    if (PyTuple_GET_SIZE(metric_names) != 8) {
        PyErr_SetString(PyExc_ValueError, "8 metric names: 4 differences, then 4 relative errors");
        return NULL;
    }
    Py_XSETREF(names, Py_NewRef(metric_names));
    Py_XSETREF(na, Py_NewRef(na_text));
    Py_XSETREF(nan_marker, Py_NewRef(nan_text));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(SUMMARY_METRIC_NAMES, NA, NAN): set once by metrics.py"},
    {"summary_metrics", (PyCFunction)(void (*)(void))summary_metrics, METH_FASTCALL,
     "summary_metrics(target, golden): metrics.summary_metrics"},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_summary", "metrics.summary_metrics in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__summary(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_max, "max");
    INTERN(s_min, "min");
    INTERN(s_mean, "mean");
    INTERN(s_norm, "norm");
#undef INTERN
    if ((zero = PyLong_FromLong(0)) == NULL) return NULL;
    return PyModule_Create(&module);
}
