/* The approval API's command-line client; see cli_client.h. */
#include "supervisor/web/cli_client.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/say.h"
#include "protocol/json_strict.h"
#include "supervisor/approval/sha256.h"
#include "supervisor/web/api_info.h"
#include "supervisor/web/http_client.h"
#include "base/term_escape.h"

#define EXIT_REFUSE 1
#define EXIT_USAGE  64
#define EXIT_NOSUP  69
#define TIMEOUT_MS  5000
#define MAX_TARGETS 64

struct targets {
	struct api_info v[MAX_TARGETS];
	unsigned n;
};

static void collect(const struct api_info *info, void *userdata)
{
	struct targets *t = userdata;

	if (t->n < MAX_TARGETS)
		t->v[t->n++] = *info;
}

static cJSON *parse_body(const struct http_response *resp);
static const char *str(const cJSON *o, const char *key);

/* Does the server at T's URL know T's nonce? A file is a claim: the port it names may since
 * belong to another program (another user's, or a supervisor in another network namespace that
 * reused the port), which must not get the token nor have its asks listed twice. Asked without
 * the token. */
static bool proven(const struct api_info *t)
{
	uint8_t raw[32];
	char challenge[65], want[65], path[128];
	struct http_response resp = {0};
	_cleanup_cjson_ cJSON *o = NULL;
	bool ok;

	if (!t->nonce[0] || getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return false;
	sha256_hex(raw, challenge);
	if (api_info_proof(t->nonce, challenge, want) < 0)
		return false;
	snprintf(path, sizeof(path), "/api-proof?challenge=%s", challenge);
	if (http_client_request(t->url, "GET", path, NULL, NULL, 0, TIMEOUT_MS, &resp) < 0)
		return false;
	o = resp.status == 200 ? parse_body(&resp) : NULL;
	http_response_free(&resp);
	ok = o && !strcmp(str(o, "proof"), want);
	explicit_bzero(want, sizeof(want));
	return ok;
}

/* Keep the targets that prove who they are; say which were left out. */
static void keep_proven(struct targets *t)
{
	unsigned k = 0;

	for (unsigned i = 0; i < t->n; i++) {
		if (proven(&t->v[i])) {
			t->v[k++] = t->v[i];
			continue;
		}
		fprintf(stderr,
		        PROG ": ignoring the API file of pid %d: the server at %s is not that "
		             "supervisor (%s)\n",
		        (int)t->v[i].pid, t->v[i].url,
		        t->v[i].nonce[0] ? "it does not know the file's nonce"
		                         : "a file without a nonce, of an older supervisor");
		explicit_bzero(&t->v[i], sizeof(t->v[i]));
	}
	t->n = k;
}

static int find_targets(const char *url, struct targets *t)
{
	_cleanup_free_ char *dir = NULL;
	int r;

	t->n = 0;
	if (url) {
		const char *tok = getenv("CLOISTER_API_TOKEN");

		snprintf(t->v[0].url, sizeof(t->v[0].url), "%s", url);
		snprintf(t->v[0].token, sizeof(t->v[0].token), "%s", tok ? tok : "");
		snprintf(t->v[0].name, sizeof(t->v[0].name), "%s", url);
		t->n = 1;
		return 0;
	}
	r = api_info_dir(&dir);
	if (r < 0)
		return r;
	r = api_info_list(dir, collect, t);
	if (r < 0 && r != -ENOENT)
		fprintf(stderr, PROG ": cannot read %s: %s\n", dir, strerror(-r));
	keep_proven(t);
	if (t->n == 0) {
		fprintf(stderr,
		        PROG ": no running supervisor found (looked in %s); start one with "
		             "`" PROG " run -- AGENT` or give --url\n",
		        dir);
		return -ENOENT;
	}
	return 0;
}

static int call(const struct api_info *t, const char *method, const char *path, const char *body,
                struct http_response *resp)
{
	char headers[512];
	int r;

	snprintf(headers, sizeof(headers), "Authorization: Bearer %s\r\n", t->token);
	r = http_client_request(t->url, method, path, t->token[0] ? headers : NULL, body,
	                        body ? strlen(body) : 0, TIMEOUT_MS, resp);
	explicit_bzero(headers, sizeof(headers));
	if (r < 0)
		fprintf(stderr, PROG ": %s (%s): %s\n", t->url, t->name, strerror(-r));
	return r;
}

static cJSON *parse_body(const struct http_response *resp)
{
	cJSON *o = NULL;

	if (cl_json_parse_strict(resp->body, resp->body_len, 32, 1000000, NULL, &o) < 0)
		return NULL;
	return o;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* What a supervisor sent, for the terminal: sandbox names, commands and domains are the
 * agent's (term_escape.h). Never NULL. */
static char *shown(const char *s)
{
	char *text = term_escape_dup(s);

	return text ? text : strdup("?");
}

static void print_error(const struct api_info *t, const struct http_response *resp)
{
	_cleanup_cjson_ cJSON *o = parse_body(resp);
	_cleanup_free_ char *why =
	        shown(o && *str(o, "error") ? str(o, "error") : (resp->body ? resp->body : ""));

	fprintf(stderr, PROG ": %s: HTTP %d: %s\n", t->name, resp->status, why ? why : "?");
	/* Every request needs the API token; say where it comes from. */
	if (resp->status == 401)
		fprintf(stderr, PROG ": %s: the API token is %s\n", t->name,
		        t->token[0] ? "refused (a stale API file?)"
		                    : "missing: with --url, put it in $CLOISTER_API_TOKEN");
}

/* JSON output, printable as is (term_escape_json). */
static void put_json(const cJSON *o)
{
	_cleanup_free_ char *text = cJSON_Print(o);
	_cleanup_free_ char *safe = text ? term_escape_json(text) : NULL;

	if (safe)
		puts(safe);
}

/* Seconds until an RFC 3339 UTC time, or -1. */
static long seconds_until(const char *rfc3339)
{
	struct tm tm = {0};

	if (!strptime(rfc3339, "%Y-%m-%dT%H:%M:%SZ", &tm))
		return -1;
	return (long)(timegm(&tm) - time(NULL));
}

/* ARG as a shell word (quoted when it needs to be), then escaped for the terminal. */
static char *shell_word(const char *arg)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                           "0123456789_-./=:,+@%";
	_cleanup_free_ char *quoted = NULL;
	size_t n = 0;

	if (*arg && strspn(arg, safe) == strlen(arg))
		return shown(arg);
	quoted = malloc(strlen(arg) * 4 + 3);
	if (!quoted)
		return NULL;
	quoted[n++] = '\'';
	for (const char *c = arg; *c; c++) {
		if (*c == '\'') {
			memcpy(quoted + n, "'\\''", 4);
			n += 4;
		} else
			quoted[n++] = *c;
	}
	quoted[n++] = '\'';
	quoted[n] = '\0';
	return shown(quoted);
}

/* The process behind an ask, under its summary line: what `--json` has, for a person. */
static void print_details(const cJSON *it, const char *indent)
{
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(it, "pid");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(it, "args");
	const cJSON *a;
	static const char *const fields[][2] = {
	        {"note", "asked again"},
	        {"exe", "executable"},
	        {"interpreter", "interpreter"},
	        {"cwd", "directory"},
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (!*str(it, fields[i][0]))
			continue;
		_cleanup_free_ char *v = shown(str(it, fields[i][0]));

		printf("%s%-11s %s\n", indent, fields[i][1], v ? v : "?");
	}
	if (cJSON_GetArraySize(args) > 0) {
		printf("%s%-11s", indent, "argv");
		cJSON_ArrayForEach(a, args)
		{
			_cleanup_free_ char *w =
			        shell_word(cJSON_IsString(a) ? a->valuestring : "");

			printf(" %s", w ? w : "?");
		}
		putchar('\n');
	}
	if (cJSON_IsNumber(pid))
		printf("%s%-11s %d\n", indent, "pid", (int)pid->valuedouble);
}

/* A pending request, from the supervisor SV; DOMAIN: from its domain list. Nonzero stops
 * the walk. */
typedef int (*pending_fn)(const struct api_info *sv, bool domain, const cJSON *req, void *userdata);

/* Every request pending at every supervisor of T to FN, each supervisor's commands
 * (/pending) before its domains (/pending-domains), until FN returns nonzero: that value is
 * returned, else 0. A list that does not come is reported on stderr; after a 401 the
 * supervisor's other list is not asked for (it would say the same). *ret_reached: the
 * supervisors that answered over HTTP at all; *ret_listed: those whose command list came. */
static int for_each_pending(struct targets *t, pending_fn fn, void *userdata, unsigned *ret_reached,
                            unsigned *ret_listed)
{
	static const char *const paths[2] = {"/pending", "/pending-domains"};

	*ret_reached = *ret_listed = 0;
	for (unsigned i = 0; i < t->n; i++) {
		for (int k = 0; k < 2; k++) {
			struct http_response resp = {0};
			_cleanup_cjson_ cJSON *o = NULL;
			const cJSON *it;

			if (call(&t->v[i], "GET", paths[k], NULL, &resp) < 0)
				break;
			*ret_reached += k == 0;
			o = resp.status == 200 ? parse_body(&resp) : NULL;
			if (!o) {
				int status = resp.status;

				print_error(&t->v[i], &resp);
				http_response_free(&resp);
				if (status == 401)
					break;
				continue;
			}
			http_response_free(&resp);
			*ret_listed += k == 0;
			cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "requests"))
			{
				int r = fn(&t->v[i], k == 1, it, userdata);

				if (r)
					return r;
			}
		}
	}
	return 0;
}

struct pending_list {
	bool json; /* collected in all; else printed */
	cJSON *all;
	int count;
};

static int list_one(const struct api_info *sv, bool domain, const cJSON *it, void *userdata)
{
	struct pending_list *l = userdata;

	(void)sv;
	l->count++;
	if (l->json) {
		cJSON_AddItemToArray(l->all, cJSON_Duplicate(it, true));
		return 0;
	}
	long left = seconds_until(str(it, "expires"));
	char when[32] = "-";
	_cleanup_free_ char *id = shown(str(it, "id")),
	                    *kind = shown(*str(it, "kind") ? str(it, "kind") : "command"),
	                    *name = shown(str(it, "cloister")),
	                    *what = shown(domain ? str(it, "domain") : str(it, "cmd"));

	if (left >= 0)
		snprintf(when, sizeof(when), "%ldm%02lds", left / 60, left % 60);
	printf("%-12s  %-8s  %-16s  %8s  %s\n", id ? id : "?", kind ? kind : "?", name ? name : "?",
	       when, what ? what : "?");
	print_details(it, "              ");
	return 0;
}

static int cmd_pending(struct targets *t, bool json)
{
	struct pending_list l = {.json = json, .all = cJSON_CreateArray()};
	unsigned reached, listed;

	for_each_pending(t, list_one, &l, &reached, &listed);
	if (json)
		put_json(l.all);
	else if (l.count == 0 && listed)
		printf("no pending requests\n");
	cJSON_Delete(l.all);
	/* A supervisor that refused to answer (401) is not "nothing pending". */
	return listed ? 0 : reached ? EXIT_REFUSE : EXIT_NOSUP;
}

static bool valid_id(const char *id);

struct show_one {
	const char *id;
	bool json;
};

static int show_one(const struct api_info *sv, bool domain, const cJSON *it, void *userdata)
{
	const struct show_one *s = userdata;
	static const char *const fields[][2] = {
	        {"id", "id"},           {"kind", "kind"},     {"cloister", "sandbox"},
	        {"project", "project"}, {"branch", "branch"}, {"agent", "agent"},
	        {"cmd", "command"},     {"domain", "domain"}, {"timestamp", "asked"},
	        {"expires", "expires"},
	};

	(void)domain;
	if (strcmp(str(it, "id"), s->id))
		return 0;
	if (s->json) {
		put_json(it);
		return 1;
	}
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
		if (!*str(it, fields[f][0]))
			continue;
		_cleanup_free_ char *v = shown(str(it, fields[f][0]));

		printf("%-11s %s\n", fields[f][1], v ? v : "?");
	}
	print_details(it, "");
	printf("%-11s pid %d at %s\n", "supervisor", (int)sv->pid, sv->url);
	return 1;
}

/* show ID: everything known of one ask, from whichever supervisor holds it. */
static int cmd_show(struct targets *t, const char *id, bool json)
{
	struct show_one s = {.id = id, .json = json};
	unsigned reached, listed;

	if (for_each_pending(t, show_one, &s, &reached, &listed))
		return 0;
	if (!reached)
		return EXIT_NOSUP;
	fprintf(stderr, PROG ": no pending request %s\n", id);
	return EXIT_REFUSE;
}

static bool valid_id(const char *id)
{
	if (strlen(id) > 64 || strspn(id, "0123456789abcdef") != strlen(id)) {
		fprintf(stderr, PROG ": \"%s\" is not a request id\n", id);
		return false;
	}
	return true;
}

static bool valid_name(const char *name)
{
	if (strlen(name) > 255 || strchr(name, '/') || !*name) {
		fprintf(stderr, PROG ": \"%s\" is not a sandbox name\n", name);
		return false;
	}
	return true;
}

/* What a decision covers: a scope, and for an exec what it matches. */
struct decide_opts {
	const char *reason;
	const char *scope;   /* NULL: once */
	const char *match;   /* NULL: exact; "program", "pattern" */
	const char *pattern; /* with match "pattern" */
};

/* The server said the decision holds but could not be written down: say so. */
static void print_persistence_error(const struct http_response *resp)
{
	_cleanup_cjson_ cJSON *o = cJSON_ParseWithLength(resp->body, resp->body_len);
	const cJSON *e = o ? cJSON_GetObjectItemCaseSensitive(o, "persistence_error") : NULL;

	if (cJSON_IsString(e))
		fprintf(stderr, PROG ": decided, but not kept: %s\n", e->valuestring);
}

static int cmd_decide(struct targets *t, const char *id, bool allow, const struct decide_opts *opts)
{
	char path[128];
	_cleanup_free_ char *body = NULL, *domain_body = NULL;
	unsigned reached = 0, refused = 0;

	if (!valid_id(id))
		return EXIT_USAGE;
	if (opts->reason || opts->scope || opts->match) {
		cJSON *o = cJSON_CreateObject();

		if (opts->reason)
			cJSON_AddStringToObject(o, "reason", opts->reason);
		if (opts->scope)
			cJSON_AddStringToObject(o, "scope", opts->scope);
		if (opts->match)
			cJSON_AddStringToObject(o, "match", opts->match);
		if (opts->pattern)
			cJSON_AddStringToObject(o, "pattern", opts->pattern);
		body = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
	}
	{
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "scope", opts->scope ? opts->scope : "once");
		domain_body = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
	}
	/* Ids are random: try each supervisor until one knows it. Domains have their own path. */
	for (unsigned i = 0; i < t->n; i++) {
		const char *kinds[2][2] = {{"/approve/", "/deny/"},
		                           {"/approve-domain/", "/deny-domain/"}};

		for (int k = 0; k < 2; k++) {
			struct http_response resp = {0};

			snprintf(path, sizeof(path), "%s%s", kinds[k][allow ? 0 : 1], id);
			/* A domain has no program or pattern: those are refused for it. */
			if (k == 1 && opts->match)
				continue;
			if (call(&t->v[i], "POST", path, k == 1 ? domain_body : body, &resp) < 0)
				break;
			reached++;
			if (resp.status == 401) {
				/* A stale API file: the ask may be another supervisor's. */
				print_error(&t->v[i], &resp);
				http_response_free(&resp);
				refused++;
				break; /* its other path would say the same */
			}
			if (resp.status == 404) {
				http_response_free(&resp);
				continue;
			}
			if (resp.status == 200) {
				if (opts->scope)
					printf("%s %s (%s%s%s)\n", allow ? "approved" : "denied",
					       id, opts->scope, opts->match ? ", " : "",
					       opts->match ? opts->match : "");
				else
					printf("%s %s\n", allow ? "approved" : "denied", id);
				print_persistence_error(&resp);
				http_response_free(&resp);
				return 0;
			}
			print_error(&t->v[i], &resp);
			http_response_free(&resp);
			return EXIT_REFUSE;
		}
	}
	if (!reached)
		return EXIT_NOSUP;
	fprintf(stderr, PROG ": no pending request %s%s\n", id,
	        refused ? " among the supervisors that took the token" : "");
	return EXIT_REFUSE;
}

static int cmd_status(struct targets *t, bool json)
{
	cJSON *all = cJSON_CreateArray();
	unsigned reached = 0, answered = 0;

	for (unsigned i = 0; i < t->n; i++) {
		struct http_response resp = {0};
		cJSON *o;
		const cJSON *sb;

		if (call(&t->v[i], "GET", "/status", NULL, &resp) < 0)
			continue;
		reached++;
		o = resp.status == 200 ? parse_body(&resp) : NULL;
		if (!o) {
			print_error(&t->v[i], &resp);
			http_response_free(&resp);
			continue;
		}
		http_response_free(&resp);
		answered++;
		if (json) {
			cJSON_AddStringToObject(o, "url", t->v[i].url);
			cJSON_AddItemToArray(all, o);
			continue;
		}
		printf("supervisor pid %d at %s/: %d pending, %d approver(s)\n", (int)t->v[i].pid,
		       t->v[i].url,
		       (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "pending")),
		       (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "approvers")));
		cJSON_ArrayForEach(sb, cJSON_GetObjectItemCaseSensitive(o, "sandboxes"))
		{
			const cJSON *pid = cJSON_GetObjectItemCaseSensitive(sb, "pid");
			char pidtext[32] = "-";

			_cleanup_free_ char *name = shown(str(sb, "name")),
			                    *sbstate = shown(str(sb, "state")),
			                    *started = shown(str(sb, "started"));

			if (cJSON_IsNumber(pid))
				snprintf(pidtext, sizeof(pidtext), "%d", (int)pid->valuedouble);
			printf("  sandbox %-20s %-8s pid %-7s since %s\n", name ? name : "?",
			       sbstate ? sbstate : "?", pidtext, started ? started : "?");
		}
		cJSON_Delete(o);
	}
	if (json)
		put_json(all);
	cJSON_Delete(all);
	return answered ? 0 : reached ? EXIT_REFUSE : EXIT_NOSUP;
}

/* How many sandboxes named NAME each supervisor runs (MATCHES[i], -1: it did not answer); the
 * total. */
static int count_named(struct targets *t, const char *name, int matches[])
{
	int total = 0;

	for (unsigned i = 0; i < t->n; i++) {
		struct http_response resp = {0};
		_cleanup_cjson_ cJSON *o = NULL;
		const cJSON *sb;

		matches[i] = -1;
		if (call(&t->v[i], "GET", "/status", NULL, &resp) < 0)
			continue;
		o = resp.status == 200 ? parse_body(&resp) : NULL;
		http_response_free(&resp);
		if (!o)
			continue;
		matches[i] = 0;
		cJSON_ArrayForEach(sb, cJSON_GetObjectItemCaseSensitive(o, "sandboxes"))
		{
			if (!strcmp(str(sb, "name"), name) && strcmp(str(sb, "state"), "stopped"))
				matches[i]++;
		}
		total += matches[i];
	}
	return total;
}

static int cmd_sandbox(struct targets *t, const char *action, const char *name, pid_t supervisor)
{
	_cleanup_free_ char *path = NULL;
	int matches[MAX_TARGETS], named;
	unsigned reached = 0, refused = 0;

	if (!valid_name(name))
		return EXIT_USAGE;
	if (asprintf(&path, "/sandboxes/%s/%s", name, action) < 0)
		return EXIT_REFUSE;
	if (supervisor > 0) {
		/* The one the person chose among several. */
		unsigned k = 0;

		for (unsigned i = 0; i < t->n; i++)
			if (t->v[i].pid == supervisor)
				t->v[k++] = t->v[i];
		t->n = k;
		if (!k) {
			fprintf(stderr, PROG ": no running supervisor with pid %d\n",
			        (int)supervisor);
			return EXIT_REFUSE;
		}
	} else if (t->n > 1 && (named = count_named(t, name, matches)) > 1) {
		/* Two sandboxes of that name: acting on the first one found would leave the other
		 * running while saying it was done. */
		fprintf(stderr,
		        PROG ": %d sandboxes are named %s; choose one with --supervisor PID:\n",
		        named, name);
		for (unsigned i = 0; i < t->n; i++)
			if (matches[i] > 0)
				fprintf(stderr, "  supervisor pid %d at %s/\n", (int)t->v[i].pid,
				        t->v[i].url);
		return EXIT_REFUSE;
	}
	for (unsigned i = 0; i < t->n; i++) {
		struct http_response resp = {0};

		if (call(&t->v[i], "POST", path, NULL, &resp) < 0)
			continue;
		reached++;
		if (resp.status == 404 || resp.status == 401) {
			/* 401: a stale API file (its token is not the supervisor's any more); the
			 * sandbox may be another supervisor's. Said, and the next one asked. */
			if (resp.status == 401) {
				print_error(&t->v[i], &resp);
				refused++;
			}
			http_response_free(&resp);
			continue;
		}
		if (resp.status == 200) {
			printf("%s: %s\n", name,
			       !strcmp(action, "kill")    ? "killed"
			       : !strcmp(action, "pause") ? "paused"
			                                  : "resumed");
			http_response_free(&resp);
			return 0;
		}
		print_error(&t->v[i], &resp);
		http_response_free(&resp);
		return EXIT_REFUSE;
	}
	if (!reached)
		return EXIT_NOSUP;
	if (refused)
		fprintf(stderr,
		        PROG ": no sandbox named %s among the supervisors that took the token\n",
		        name);
	else
		fprintf(stderr, PROG ": no sandbox named %s\n", name);
	return EXIT_REFUSE;
}

int cli_client_is_command(const char *name)
{
	static const char *const cmds[] = {"pending", "show", "approve", "deny",
	                                   "status",  "kill", "pause",   "resume"};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(name, cmds[i]))
			return 1;
	return 0;
}

static void usage(FILE *out)
{
	fputs("usage: " PROG " pending [--json]\n"
	      "       " PROG " show ID [--json]\n"
	      "       " PROG " approve ID [--scope S [--program | --pattern P]]\n"
	      "       " PROG " deny ID [--reason TEXT] [--scope S [--program | --pattern P]]\n"
	      "       " PROG " status [--json]\n"
	      "       " PROG " kill|pause|resume NAME [--supervisor PID]\n"
	      "\n"
	      "Talk to every running supervisor of this user (or to --url URL, with the API token\n"
	      "in $CLOISTER_API_TOKEN).\n"
	      "\n"
	      "--scope once|session|project|global: how long the decision holds (default once);\n"
	      "for a command wider than once it covers the exact command, --program (this program\n"
	      "with any arguments) or --pattern P (e.g. 'git status **': '*' within one argument,\n"
	      "'**' any number of arguments). Project and global decisions are kept in the\n"
	      "decisions files (`" PROG " decisions list`).\n",
	      out);
}

int cli_client_main(int argc, char **argv)
{
	static const struct option longopts[] = {
	        {"json", no_argument, NULL, 'j'},
	        {"reason", required_argument, NULL, 'r'},
	        {"scope", required_argument, NULL, 's'},
	        {"program", no_argument, NULL, 'P'},
	        {"pattern", required_argument, NULL, 'p'},
	        {"url", required_argument, NULL, 'u'},
	        {"supervisor", required_argument, NULL, 'S'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	const char *cmd = argv[0], *url = NULL, *reason = NULL;
	struct decide_opts dopts = {0};
	long supervisor = 0;
	char *end;
	bool json = false;
	struct targets *t;
	int c, r;

	/* Options may follow the ID ("deny ID --reason R"). */
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'r':
			reason = optarg;
			break;
		case 's':
			dopts.scope = optarg;
			break;
		case 'P':
			if (dopts.match) {
				usage(stderr);
				return EXIT_USAGE;
			}
			dopts.match = "program";
			break;
		case 'p':
			if (dopts.match) {
				usage(stderr);
				return EXIT_USAGE;
			}
			dopts.match = "pattern";
			dopts.pattern = optarg;
			break;
		case 'u':
			url = optarg;
			break;
		case 'S':
			errno = 0;
			supervisor = strtol(optarg, &end, 10);
			if (errno || *end || supervisor < 1 || supervisor > 4194304) {
				fprintf(stderr, PROG ": --supervisor: \"%s\" is not a pid\n",
				        optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	bool needs_arg = strcmp(cmd, "pending") && strcmp(cmd, "status");

	if ((needs_arg && optind + 1 != argc) || (!needs_arg && optind != argc) ||
	    (reason && strcmp(cmd, "deny")) ||
	    (supervisor && strcmp(cmd, "kill") && strcmp(cmd, "pause") && strcmp(cmd, "resume"))) {
		usage(stderr);
		return EXIT_USAGE;
	}
	bool deciding = !strcmp(cmd, "approve") || !strcmp(cmd, "deny");

	/* A program or pattern says what a scope wider than once covers. */
	if ((dopts.scope &&
	     (!deciding || (strcmp(dopts.scope, "once") && strcmp(dopts.scope, "session") &&
	                    strcmp(dopts.scope, "project") && strcmp(dopts.scope, "global")))) ||
	    (dopts.match && (!dopts.scope || !strcmp(dopts.scope, "once")))) {
		fprintf(stderr, PROG ": --scope is once, session, project or global; --program and "
		                     "--pattern need a scope wider than once\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	/* A malformed argument is a usage error whether or not a supervisor runs. */
	bool decide = !strcmp(cmd, "approve") || !strcmp(cmd, "deny") || !strcmp(cmd, "show");

	if (needs_arg && !(decide ? valid_id(argv[optind]) : valid_name(argv[optind])))
		return EXIT_USAGE;
	t = calloc(1, sizeof(*t));
	if (!t)
		return EXIT_REFUSE;
	if (find_targets(url, t) < 0) {
		free(t);
		return EXIT_NOSUP;
	}
	if (!strcmp(cmd, "pending"))
		r = cmd_pending(t, json);
	else if (!strcmp(cmd, "status"))
		r = cmd_status(t, json);
	else if (!strcmp(cmd, "show"))
		r = cmd_show(t, argv[optind], json);
	else if (!strcmp(cmd, "approve") || !strcmp(cmd, "deny")) {
		dopts.reason = reason;
		r = cmd_decide(t, argv[optind], !strcmp(cmd, "approve"), &dopts);
	} else
		r = cmd_sandbox(t, cmd, argv[optind], (pid_t)supervisor);
	explicit_bzero(t, sizeof(*t));
	free(t);
	return r;
}
