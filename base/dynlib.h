/* A shared library loaded with dlopen(3) only while a mode needs it, and unloaded after.
 *
 * The supervisor links what every run uses; a library that only some modes use (libnftables
 * for a sandbox netns's rules, libnl for its routes) is mapped only while that mode sets
 * itself up, so that an idle supervisor does not keep its pages. A module lists the functions
 * it calls once, as an X-macro, and gets a table of pointers typed by the library's own header:
 *
 *   #define NFT_FUNCS(X) X(nft_ctx_new) X(nft_ctx_free)
 *   DYNLIB_DEFINE(nft, NFT_FUNCS, "libnftables.so.1", "the sandbox's egress rules");
 *   ...  r = dynlib_use(&nft_lib, err);  nft.nft_ctx_new(0);  dynlib_release(&nft_lib);
 *
 * Loading resolves every listed function at once (RTLD_NOW): a library too old for one of
 * them fails here, with its name, not later. Calls come from one thread (the loop's); a
 * function of the table may run in another thread between use and release. */
#ifndef CLOISTER_DYNLIB_H
#define CLOISTER_DYNLIB_H

#include <stddef.h>

#include "base/error.h"

struct dynlib {
	const char *soname;       /* "libnftables.so.1": the ABI the headers were built for */
	const char *needed_for;   /* what cannot work without it, for the error message */
	const char *const *names; /* the functions, NULL-terminated */
	void *table;              /* as many function pointers, in the order of names */
	size_t table_size;
	void *handle;   /* while loaded */
	unsigned users; /* dynlib_use calls not yet released */
};

/* Load the library if it is not loaded yet and fill its table. 0, or -ENOENT (cannot be
 * loaded, or lacks a function) with err saying which library, what needs it and why. */
int dynlib_use(struct dynlib *lib, struct cl_error *err);

/* One dynlib_use is over; the last one unloads the library and clears the table, so that a
 * call through it after the release faults at address 0 instead of running unmapped code. */
void dynlib_release(struct dynlib *lib);

/* While loaded: a symbol of the library or of the libraries it loaded (NULL if none). For
 * undoing what it did to a library that outlives it. */
void *dynlib_symbol(const struct dynlib *lib, const char *name);

#define DYNLIB_SLOT_(f) __typeof__(f) *f;
#define DYNLIB_NAME_(f) #f,
/* Defines `static struct {...} NAME` (the table: NAME.func(...)) and `static struct dynlib
 * NAME##_lib`. */
#define DYNLIB_DEFINE(NAME, FUNCS, SONAME, NEEDED_FOR)                                \
	static struct {                                                               \
		FUNCS(DYNLIB_SLOT_)                                                   \
	} NAME;                                                                       \
	static const char *const NAME##_names_[] = {FUNCS(DYNLIB_NAME_) NULL};        \
	_Static_assert(sizeof(NAME) == (sizeof(NAME##_names_) / sizeof(char *) - 1) * \
	                                       sizeof(void (*)(void)),                \
	               "a table of function pointers only");                          \
	static struct dynlib NAME##_lib = {.soname = SONAME,                          \
	                                   .needed_for = NEEDED_FOR,                  \
	                                   .names = NAME##_names_,                    \
	                                   .table = &NAME,                            \
	                                   .table_size = sizeof(NAME)}

#endif
