/* canonbtf._btf.diff_text (diffreport.c): diff's text report in C. */
#ifndef CANONBTF_DIFFREPORT_H
#define CANONBTF_DIFFREPORT_H

#include <Python.h>

#include "diffkeys.h"

/* The text report of two sides planned by diff_plan (with keys), as bytes (latin-1, as
 * render_text writes it); `pairing(duplicates, old anonymous roots, new anonymous roots)`
 * pairs what names do not (diff._compiled_pairing). None where the reference must run. */
PyObject *diff_report(diff_side_t plan[2], PyObject *pairing);

#endif
