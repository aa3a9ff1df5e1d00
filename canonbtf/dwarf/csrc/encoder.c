/* An encoder's plain life: a unit read and converted, and the memory freed. The caller
 * (native/csrc/encoder_bindings.c for Python, tests/c/fuzz_encoder.c without) owns the
 * sections and answers encoder_calls_t. */
#include "core.h"
#include <stdlib.h>

int encode_unit(encoder_t *e, const unit_t *u)
{
    e->unit = *u;
    e->bad = 0;
    e->why[0] = 0;
    int rc = read_unit(e);
    return rc ? rc : convert_unit(e);
}

#define FREE_VEC(v) do { free((v).a); (v).a = NULL; (v).n = (v).cap = 0; } while (0)

void encoder_free(encoder_t *e)
{
    FREE_VEC(e->abbrevs); FREE_VEC(e->specs); FREE_VEC(e->nodes); FREE_VEC(e->attrs);
    FREE_VEC(e->types); FREE_VEC(e->type_at); FREE_VEC(e->stack);
    FREE_VEC(e->pending_tags); FREE_VEC(e->recs); FREE_VEC(e->items); FREE_VEC(e->owners);
    FREE_VEC(e->local);
    FREE_VEC(e->decl_tags); FREE_VEC(e->programs); FREE_VEC(e->low_pcs);
    FREE_VEC(e->pending_skips); FREE_VEC(e->skips); FREE_VEC(e->skipped_tags);
    FREE_VEC(e->part); FREE_VEC(e->waiting); FREE_VEC(e->on_path); FREE_VEC(e->key);
    FREE_VEC(e->dfs); FREE_VEC(e->ser); FREE_VEC(e->unit_key_list);
    FREE_VEC(e->token_list); FREE_VEC(e->new_entries); FREE_VEC(e->entry_parts);
    intern_free(&e->nontype);
    intern_free(&e->names);
    idmap_free(&e->str_names);
    intern_free(&e->tokens);
    intern_free(&e->entries);
}
