/* nftunload: install the egress ruleset in a new netns as `run` does (libnftables loaded for
 * it, then unloaded: base/dynlib.h), then check what the unload must leave right: libnftables
 * is no longer mapped, and libgmp, which stays loaded for GnuTLS (libmicrohttpd's), allocates
 * with its own allocator again, not with libnftables' (unmapped: that would crash here).
 * Prints "ok" and exits 0; 77 when there is no libgmp (nothing to check); else 1 and why. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "netfilter/netns.h"
#include "netfilter/nft_egress.h"

static int mapped(const char *name)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = 0;

	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, name) != NULL;
	if (f)
		fclose(f);
	return found;
}

int main(void)
{
	struct nft_egress_config cfg = {.proxy_port = 10080, .dns_port = 10053, .persist = true};
	struct cl_error err = {""};
	struct nft_egress *rules = NULL;
	/* mpz_t is 16 bytes (two ints and a pointer); room to spare. */
	_Alignas(16) unsigned char z[64];
	void (*init)(void *) = NULL, (*pow)(void *, unsigned long, unsigned long) = NULL;
	void (*clear)(void *) = NULL;
	void *gmp;
	int netns_fd = -1, r;

	/* Loaded beforehand and kept, as GnuTLS's libhogweed keeps it in the supervisor. */
	gmp = dlopen("libgmp.so.10", RTLD_NOW | RTLD_GLOBAL);
	if (gmp) {
		init = (void (*)(void *))dlsym(gmp, "__gmpz_init");
		pow = (void (*)(void *, unsigned long, unsigned long))dlsym(gmp,
		                                                            "__gmpz_ui_pow_ui");
		clear = (void (*)(void *))dlsym(gmp, "__gmpz_clear");
	}
	if (!gmp || !init || !pow || !clear) {
		printf("libgmp.so.10 cannot be loaded\n");
		return 77;
	}
	r = netfilter_netns_create(&netns_fd);
	if (r >= 0)
		r = netfilter_netns_setup(netns_fd, &err);
	if (r >= 0)
		r = nft_egress_install(netns_fd, &cfg, &rules, &err);
	if (r < 0) {
		printf("install: %s (%s)\n", err.msg, strerror(-r));
		return 1;
	}
	if (mapped("libnftables")) {
		printf("libnftables is still mapped\n");
		return 1;
	}
	init(z);
	pow(z, 7, 4000); /* 11 kbit: allocated and grown through libgmp's allocator */
	clear(z);
	nft_egress_free(rules);
	printf("ok\n");
	return 0;
}
