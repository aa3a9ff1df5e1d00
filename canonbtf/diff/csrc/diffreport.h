/* diff's whole report in plain C (diffreport.c); the pairing of duplicated names and
 * anonymous roots is a callback (diff_bindings.c calls diff._CompiledPairing). */
#ifndef CANONBTF_DIFFREPORT_H
#define CANONBTF_DIFFREPORT_H

#include <stddef.h>
#include <stdint.h>

#include "difffacts.h"
#include "diffkeys.h"
#include "text.h"

/* What the pairing calls the entries it gives. */
enum { DIFF_PAIR, DIFF_REMOVED, DIFF_ADDED };

/* An entry the pairing gives, as it gives it (the report checks it): a pair of old and
 * new ids, or an old root removed or a new one added (the other id 0); `ordinal` the tag
 * of a duplicated name's root (from 1), else 0. */
typedef struct {
    uint64_t ordinal, status, old, new;
} diff_entry_t;

/* The pairing's answer: every duplicated name's entries in turn, then the anonymous
 * roots'. Both arrays are malloc'd by the pairing and freed by the report. */
typedef struct {
    diff_entry_t *entry;
    size_t n;
    size_t *named_end;   /* by duplicated name: the end of its entries in `entry` */
    size_t nnamed;
} diff_paired_t;

/* The pairing: told each duplicated name (family, name) with its roots, side 0's then
 * side 1's, then each side's anonymous roots not spared, with facts without tags
 * [from, to) of `facts` (valid during the call) and whether they spell a duplicated name;
 * then asked for its answer. Each callback returns 0, or -1 after reporting its failure
 * (the report then stops). */
typedef struct {
    void *ctx;
    int (*dup_name)(void *ctx, int family, const char *name, size_t len);
    int (*dup_root)(void *ctx, int side, uint32_t id, const facts_t *facts, size_t from,
                    size_t to, int spells_dup);
    int (*anon_root)(void *ctx, int side, uint32_t id, int family, const facts_t *facts,
                     size_t from, size_t to, int spells_dup);
    int (*pair)(void *ctx, diff_paired_t *out);
} diff_pairer_t;

/* The report of two sides planned by diff_plan (with keys): the text render_text writes
 * (latin-1), or with `json` render_json's, into *out (emptied first; the caller frees
 * out->p), and the number of changes. 0, or -1 after a failure reported through
 * failure.h (declined: the reference must make the report; a pairing that gives an id
 * out of range or too few lists is declined too) or by a callback. */
int diff_report(diff_side_t plan[2], const diff_pairer_t *pairer, int json, text_t *out,
                size_t *nchanges);

#endif
