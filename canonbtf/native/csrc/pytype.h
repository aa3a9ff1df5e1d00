/* The boilerplate of the extensions' Python types, written once: the head of a type
 * object (a plain, non-subclassable type with a deallocator and a docstring) and a
 * method table's row, the method named once for its name, C function and docstring. */
#ifndef CANONBTF_PYTYPE_H
#define CANONBTF_PYTYPE_H

#include <Python.h>

/* The first fields of a static PyTypeObject for the C struct `object`, its instances
 * freed by `dealloc`; the type's further fields follow it. */
#define PLAIN_TYPE_HEAD(qualified_name, object, dealloc, doc) \
    PyVarObject_HEAD_INIT(NULL, 0) \
    .tp_name = qualified_name, \
    .tp_basicsize = sizeof(object), \
    .tp_dealloc = (destructor)(dealloc), \
    .tp_flags = Py_TPFLAGS_DEFAULT, \
    .tp_doc = doc

/* A PyMethodDef row of method `name` of type `prefix`: its C function prefix_name, its
 * docstring prefix_name_doc (PyDoc_STRVAR beside the function). */
#define METHOD_ROW(prefix, name, flags) \
    {#name, (PyCFunction)prefix##_##name, flags, prefix##_##name##_doc}

#endif
