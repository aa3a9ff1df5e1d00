/* canonbtf._btf.diff_report (diffreport.c): diff's report in C. */
#ifndef CANONBTF_DIFFREPORT_H
#define CANONBTF_DIFFREPORT_H

#include <Python.h>

#include "diffkeys.h"

/* The report of two sides planned by diff_plan (with keys): (bytes, number of changes),
 * the text render_text writes (latin-1) or with `json` render_json's;
 * `pairing(duplicates, old anonymous roots, new anonymous roots)` pairs what names do
 * not (diff._CompiledPairing). None where the reference must make it. */
PyObject *diff_report(diff_side_t plan[2], PyObject *pairing, int json);

#endif
