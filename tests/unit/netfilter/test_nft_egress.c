/* The egress ruleset text, without a kernel: what nft is asked to install. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "netfilter/nft_egress.h"

static void test_ruleset_redirects_dns_then_keeps_local_then_redirects_tcp(void **state)
{
	struct nft_egress_config cfg = {.proxy_port = 15001, .dns_port = 15053};
	char *text = NULL;

	(void)state;
	assert_int_equal(nft_egress_ruleset(&cfg, &text), 0);
	assert_string_equal(text, "table inet cloister {\n"
	                          "\tflags owner\n"
	                          "\tchain nat_output {\n"
	                          "\t\ttype nat hook output priority -100; policy accept;\n"
	                          "\t\tmeta l4proto { tcp, udp } th dport 53 redirect to :15053\n"
	                          "\t\tfib daddr type local return\n"
	                          "\t\tmeta l4proto tcp redirect to :15001\n"
	                          "\t}\n"
	                          "\tchain filter_output {\n"
	                          "\t\ttype filter hook output priority 0; policy drop;\n"
	                          "\t\tfib daddr type local accept\n"
	                          "\t}\n"
	                          "}\n");
	free(text);
}

static void test_ruleset_drops_by_default_and_accepts_only_local(void **state)
{
	struct nft_egress_config cfg = {.proxy_port = 1, .dns_port = 65535};
	char *text = NULL;
	const char *filter;

	(void)state;
	assert_int_equal(nft_egress_ruleset(&cfg, &text), 0);
	filter = strstr(text, "chain filter_output");
	assert_non_null(filter);
	assert_non_null(strstr(filter, "policy drop;"));
	/* The only accept in the filter chain is for local destinations. */
	assert_ptr_equal(strstr(filter, "accept\n"), strstr(filter, "local accept\n") + 6);
	assert_non_null(strstr(text, "redirect to :65535\n"));
	assert_non_null(strstr(text, "redirect to :1\n"));
	free(text);
}

/* persist: the table is created beforehand, so only its chains and rules are added. */
static void test_persist_ruleset_adds_the_same_chains_to_an_existing_table(void **state)
{
	struct nft_egress_config cfg = {.proxy_port = 15001, .dns_port = 15053, .persist = true};
	char *text = NULL;

	(void)state;
	assert_int_equal(nft_egress_ruleset(&cfg, &text), 0);
	assert_string_equal(
	        text,
	        "add chain inet cloister nat_output { type nat hook output priority -100; "
	        "policy accept; }\n"
	        "add rule inet cloister nat_output meta l4proto { tcp, udp } th dport 53 redirect "
	        "to :15053\n"
	        "add rule inet cloister nat_output fib daddr type local return\n"
	        "add rule inet cloister nat_output meta l4proto tcp redirect to :15001\n"
	        "add chain inet cloister filter_output { type filter hook output priority 0; "
	        "policy drop; }\n"
	        "add rule inet cloister filter_output fib daddr type local accept\n");
	assert_null(strstr(text, "table inet"));
	free(text);
}

static void test_ruleset_rejects_port_zero_and_leaves_output_alone(void **state)
{
	struct nft_egress_config zero_proxy = {.proxy_port = 0, .dns_port = 53};
	struct nft_egress_config zero_dns = {.proxy_port = 3128, .dns_port = 0};
	char *text = (char *)"untouched";

	(void)state;
	assert_int_equal(nft_egress_ruleset(&zero_proxy, &text), -EINVAL);
	assert_int_equal(nft_egress_ruleset(&zero_dns, &text), -EINVAL);
	assert_int_equal(nft_egress_ruleset(NULL, &text), -EINVAL);
	assert_string_equal(text, "untouched");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_ruleset_redirects_dns_then_keeps_local_then_redirects_tcp),
	        cmocka_unit_test(test_persist_ruleset_adds_the_same_chains_to_an_existing_table),
	        cmocka_unit_test(test_ruleset_drops_by_default_and_accepts_only_local),
	        cmocka_unit_test(test_ruleset_rejects_port_zero_and_leaves_output_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
