/* Optional libraries through dlopen(3). See dynlib.h. */
#include "base/dynlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <string.h>

int dynlib_use(struct dynlib *lib, struct cl_error *err)
{
	void *h;
	size_t i;

	if (lib->handle) {
		lib->users++;
		return 0;
	}
	/* RTLD_LOCAL: its symbols stay out of the global scope, so nothing loaded later binds
	 * to them and keeps them in use after the release. */
	h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return cl_error_set(err, -ENOENT, "cannot load %s, needed for %s: %s", lib->soname,
		                    lib->needed_for, dlerror());
	for (i = 0; lib->names[i]; i++) {
		void *sym;

		(void)dlerror();
		sym = dlsym(h, lib->names[i]);
		if (!sym) {
			memset(lib->table, 0, lib->table_size);
			dlclose(h);
			return cl_error_set(err, -ENOENT,
			                    "cannot use %s, needed for %s: it has no %s",
			                    lib->soname, lib->needed_for, lib->names[i]);
		}
		/* memcpy: a data pointer's bytes into a function pointer's slot, the way POSIX
		 * lets dlsym's result be used, without an aliasing cast. */
		memcpy((char *)lib->table + i * sizeof(void (*)(void)), &sym, sizeof(sym));
	}
	lib->handle = h;
	lib->users = 1;
	return 0;
}

void dynlib_release(struct dynlib *lib)
{
	if (!lib->handle || --lib->users > 0)
		return;
	memset(lib->table, 0, lib->table_size);
	dlclose(lib->handle);
	lib->handle = NULL;
	/* What it allocated and freed (in the arena of the thread that called it, often) is
	 * free but still resident: give those pages back. */
	malloc_trim(0);
}

void *dynlib_symbol(const struct dynlib *lib, const char *name)
{
	return lib->handle ? dlsym(lib->handle, name) : NULL;
}
