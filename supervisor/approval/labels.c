/* Sandbox labels (branch, agent) and .git/HEAD parsing; see labels.h. */
#include "supervisor/approval/labels.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct label {
	char sandbox[LABELS_VALUE_MAX];
	char branch[LABELS_VALUE_MAX];
	char agent[LABELS_VALUE_MAX];
	unsigned long long age; /* set order: the smallest is replaced first */
};

struct labels {
	struct label entries[LABELS_MAX];
	size_t n;
	unsigned long long clock;
};

int labels_new(struct labels **ret)
{
	struct labels *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	*ret = l;
	return 0;
}

void labels_free(struct labels *l)
{
	free(l);
}

/* Copy S (NULL: "") into DST, cut to fit and never in the middle of a UTF-8 sequence. */
static void copy_cut(char *dst, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n >= LABELS_VALUE_MAX) {
		n = LABELS_VALUE_MAX - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	if (n)
		memcpy(dst, s, n);
	dst[n] = '\0';
}

static struct label *find(const struct labels *l, const char *sandbox)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->entries[i].sandbox, sandbox))
			return (struct label *)&l->entries[i];
	return NULL;
}

int labels_set(struct labels *l, const char *sandbox, const char *branch, const char *agent)
{
	struct label *e;

	if (!sandbox || !sandbox[0] || strlen(sandbox) >= LABELS_VALUE_MAX)
		return -EINVAL;
	e = find(l, sandbox);
	if (!e && l->n < LABELS_MAX)
		e = &l->entries[l->n++];
	if (!e) {
		e = &l->entries[0];
		for (size_t i = 1; i < l->n; i++)
			if (l->entries[i].age < e->age)
				e = &l->entries[i];
	}
	copy_cut(e->sandbox, sandbox);
	copy_cut(e->branch, branch);
	copy_cut(e->agent, agent);
	e->age = ++l->clock;
	return 0;
}

void labels_get(const struct labels *l, const char *sandbox, const char **ret_branch,
                const char **ret_agent)
{
	const struct label *e = l && sandbox ? find(l, sandbox) : NULL;

	*ret_branch = e ? e->branch : "";
	*ret_agent = e ? e->agent : "";
}

/* TEXT[0..LEN) without one trailing "\n" (or "\r\n"). */
static size_t trim_newline(const char *text, size_t len)
{
	if (len && text[len - 1] == '\n')
		len--;
	if (len && text[len - 1] == '\r')
		len--;
	return len;
}

static bool printable(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

static int copy_field(const char *s, size_t len, char *ret, size_t size)
{
	if (!len || !printable(s, len))
		return -EINVAL;
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(ret, s, len);
	ret[len] = '\0';
	return 0;
}

int labels_parse_git_head(const char *text, size_t len, char *ret, size_t size)
{
	static const char ref[] = "ref: refs/heads/";
	size_t hex = 0;

	len = trim_newline(text, len);
	if (len > sizeof(ref) - 1 && !memcmp(text, ref, sizeof(ref) - 1))
		return copy_field(text + sizeof(ref) - 1, len - (sizeof(ref) - 1), ret, size);
	while (hex < len && text[hex] && strchr("0123456789abcdef", text[hex]))
		hex++;
	if (hex == len && (len == 40 || len == 64))
		return copy_field(text, 12, ret, size);
	return -EINVAL;
}

int labels_parse_gitdir(const char *text, size_t len, char *ret, size_t size)
{
	static const char pre[] = "gitdir: ";

	len = trim_newline(text, len);
	if (len <= sizeof(pre) - 1 || memcmp(text, pre, sizeof(pre) - 1))
		return -EINVAL;
	return copy_field(text + sizeof(pre) - 1, len - (sizeof(pre) - 1), ret, size);
}
