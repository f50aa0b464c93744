/* Fuzz the proxy's request head parser and the helpers that read parts of it (authority,
 * Host, absolute-form target, Basic credentials), as an agent would feed them.
 * Beyond memory safety: a parsed head lies inside the input, every header lies inside the
 * head, and no prefix of a head decides before the head is complete. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/egress/http_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_inside(const void *p, size_t len, const char *buf, size_t size)
{
	const char *c = p;

	if (c < buf || c + len > buf + size)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct http_request_head head;
	const char *buf = (const char *)data;
	char user[HTTP_AUTH_MAX + 1], password[HTTP_AUTH_MAX + 1];
	struct http_authority a;
	const char *path;
	size_t path_len;
	int n = http_head_parse(buf, size, &head, NULL);

	if (n <= 0) {
		/* The helpers also take raw text: the first byte picks one. */
		if (size > 0 && data[0] % 3 == 0)
			http_basic_auth_decode(buf + 1, size - 1, user, password, NULL);
		else if (size > 0 && data[0] % 3 == 1)
			http_authority_parse(buf + 1, size - 1, data[0] & 4 ? 80 : 0, &a, NULL);
		else if (size > 0 &&
		         http_target_absolute(buf + 1, size - 1, &a, &path, &path_len, NULL) == 0)
			check_inside(path, path_len, buf, size);
		return 0;
	}
	if ((size_t)n > size || (size_t)n != head.head_len || n > HTTP_HEAD_MAX_BYTES)
		abort();
	check_inside(head.method, head.method_len, buf, (size_t)n);
	check_inside(head.target, head.target_len, buf, (size_t)n);
	for (size_t i = 0; i < head.n_headers; i++) {
		check_inside(head.headers[i].name, head.headers[i].name_len, buf, (size_t)n);
		check_inside(head.headers[i].value, head.headers[i].value_len, buf, (size_t)n);
	}
	if (http_head_parse(buf, (size_t)n - 1, &head, NULL) != 0)
		abort();
	http_head_parse(buf, (size_t)n, &head, NULL);
	if (head.connect)
		http_authority_parse(head.target, head.target_len, 0, &a, NULL);
	else if (http_target_absolute(head.target, head.target_len, &a, &path, &path_len, NULL) ==
	         0)
		check_inside(path, path_len, head.target, head.target_len);
	http_head_host(&head, &a, NULL);
	if (head.proxy_auth &&
	    http_basic_auth_decode(head.proxy_auth->value, head.proxy_auth->value_len, user,
	                           password, NULL) == 0 &&
	    (strlen(user) + strlen(password) + 1 > HTTP_AUTH_MAX))
		abort();
	return 0;
}
