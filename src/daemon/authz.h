/* loomd's authorization model, written once (docs/security.md#who-may-call-what):
 * every RPC method and dashboard route declares who may call it on what,
 * and one guard, run by the dispatcher before every handler, enforces the
 * declaration. A method added without one is refused at start (loomd does
 * not start) and by every call to it; the table in docs/security.md is
 * printed from the same declarations (loomd --print-authz-table). */
#ifndef LOOMD_AUTHZ_H
#define LOOMD_AUTHZ_H

#include <stdbool.h>

#include "daemon/methods.h"
#include "loom/auth.h"
#include "loom/core.h"
#include "loom/rpc.h"
#include "loom/store.h"

typedef enum loomd_authz_who {
    LOOMD_AUTHZ_ANYONE,  /* every authenticated caller (what it sees may still be cut) */
    LOOMD_AUTHZ_OWNER,   /* the owner of the job named by job_param, or an operator */
    LOOMD_AUTHZ_OPERATOR /* operators only (--operators GROUP, root, the token holder) */
} loomd_authz_who_t;

typedef struct loomd_authz_rule {
    const char *name;      /* the RPC method, or the dashboard's route ("GET /api/log") */
    loomd_authz_who_t who; /* who may call it */
    /* LOOMD_AUTHZ_OWNER: the parameter naming the job(s) it acts on, a job
     * id or an array of them; job_optional: a call without it acts on no
     * job and is open to anyone. */
    const char *job_param;
    bool job_optional;
    const char *what; /* on what, and what the caller sees (one line for the table) */
} loomd_authz_rule_t;

/* The declarations: RPC methods first, then the dashboard's routes. */
size_t loomd_authz_count(void);
const loomd_authz_rule_t *loomd_authz_at(size_t i);
/* The declaration of name, or NULL when it has none. */
const loomd_authz_rule_t *loomd_authz_find(const char *name);

/* Checks that every method of d has a declaration (LOOM_EINVAL naming the
 * first without one) and installs the guard on d, reading jobs through m
 * (its store and identities). m must outlive d. */
int loomd_authz_install(loom_rpc_dispatcher_t *d, loomd_methods_t *m, loom_err_t *err);

/* Whether `who` may call rule's method on job (NULL: on no job). */
bool loomd_authz_allows(const loomd_identity_t *ident, const loomd_authz_rule_t *rule,
                        const loom_auth_identity_t *who, const loom_job_t *job);

/* The table of docs/security.md (Markdown), from the declarations. */
int loomd_authz_table(loom_buf_t *out);

#endif
