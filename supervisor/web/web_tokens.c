/* The token API (guardian-api.md "Token API") and the labels a registration sets; see
 * web.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "protocol/json_strict.h"
#include "supervisor/approval/labels.h"
#include "supervisor/approval/tokens.h"
#include "supervisor/approval/worktree.h"
#include "supervisor/web/web_internal.h"

/* ---- token API --------------------------------------------------------------------------- */

/* A registered cloister's branch, for /pending: its worktree's checked-out branch now (it is
 * not followed afterwards). Its agent label is kept. */
static void label_worktree(struct web *web, const char *cloister, const char *worktree)
{
	char branch[LABELS_VALUE_MAX];
	const char *old_branch, *agent;

	if (worktree_git_branch(worktree, branch, sizeof(branch)) < 0)
		return;
	labels_get(web->labels, cloister, &old_branch, &agent);
	_cleanup_free_ char *keep = strdup(agent);

	if (keep)
		(void)labels_set(web->labels, cloister, branch, keep);
}

int web_set_labels(struct web *web, const char *sandbox, const char *branch, const char *agent)
{
	if (!web)
		return 0; /* no web server: nobody to tell */
	return labels_set(web->labels, sandbox, branch, agent);
}

static const char *opt_string(const cJSON *o, const char *key, bool *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!v || cJSON_IsNull(v))
		return NULL;
	if (!cJSON_IsString(v)) {
		*bad = true;
		return NULL;
	}
	return v->valuestring;
}

void web_on_tokens(void *userdata, struct http_exchange *ex)
{
	struct web *web = userdata;
	const char *method = http_exchange_method(ex);
	const char *path = http_exchange_path(ex);
	const char *arg;

	/* No dashboard here; listing tokens reveals secrets, so even GET needs the API token. */
	if (!web_request_allowed(web, ex, false, false))
		return;
	if (!strcmp(path, "/tokens") && !strcmp(method, "POST")) {
		_cleanup_cjson_ cJSON *body = web_body_object(ex, false);
		bool bad = false;
		const char *token, *cloister, *project, *worktree;
		int r;

		if (!body)
			return;
		token = opt_string(body, "token", &bad);
		cloister = opt_string(body, "cloister", &bad);
		project = opt_string(body, "project", &bad);
		worktree = opt_string(body, "worktree", &bad);
		if (bad || !token || !cloister) {
			web_respond_error(ex, 400, "token and cloister are required strings");
			return;
		}
		r = tokens_register(web->tokens, token, cloister, project, worktree);
		if (r >= 0 && worktree)
			label_worktree(web, cloister, worktree);
		if (r == -EINVAL) {
			web_respond_error(
			        ex, 400,
			        "invalid token or field (token: 16-256 printable characters)");
			return;
		}
		if (r < 0) {
			web_respond_error(ex, r == -ENOSPC ? 507 : 500,
			                  r == -ENOSPC ? "too many tokens" : strerror(-r));
			return;
		}
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "status", "registered");
		web_respond_json(ex, 201, o);
		return;
	}
	if (!strcmp(path, "/tokens") && !strcmp(method, "GET")) {
		cJSON *o = cJSON_CreateObject();
		cJSON *arr = cJSON_AddArrayToObject(o, "tokens");

		for (size_t i = 0; i < tokens_count(web->tokens); i++) {
			const struct token_entry *e = tokens_at(web->tokens, i);
			cJSON *t = cJSON_CreateObject();

			cJSON_AddStringToObject(t, "token", e->token);
			cJSON_AddStringToObject(t, "cloister", e->cloister);
			cJSON_AddStringToObject(t, "project", e->project ? e->project : "");
			cJSON_AddStringToObject(t, "worktree", e->worktree ? e->worktree : "");
			cJSON_AddItemToArray(arr, t);
		}
		web_respond_json(ex, 200, o);
		return;
	}
	if ((arg = web_path_arg(path, "/tokens/")) && !strcmp(method, "DELETE")) {
		if (tokens_revoke(web->tokens, arg) < 0) {
			web_respond_error(ex, 404, "token not found");
			return;
		}
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "status", "revoked");
		web_respond_json(ex, 200, o);
		return;
	}
	if (!strcmp(path, "/tokens") || web_path_arg(path, "/tokens/")) {
		web_respond_error(ex, 405, "method not allowed");
		return;
	}
	web_respond_error(ex, 404, "not found");
}
