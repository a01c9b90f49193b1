/* SPDX-License-Identifier: MIT */
/* fault_hook_test - a fault plan behind transport/hca.h's fault hook: the answer carries the
 * firing rule's action, argument, delay, site, call number and canonical text; the counts are
 * the plan's, per side; no plan, no hook. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "faults/fault_hook.h"

static void test_no_plan_no_hook(void **state)
{
	(void)state;
	struct hca_fault_hook h = fault_plan_hook(NULL);
	assert_null(h.check);
	assert_null(h.ctx);
}

static void test_answer_from_the_plan(void **state)
{
	(void)state;
	fault_plan *p;
	struct hca_fault_answer a;
	const enum fault_site send[] = { fault_site_msg(VOCAB_MSG_READY), FAULT_SITE_POST_SEND_SEND,
					 FAULT_SITE_POST_SEND };
	assert_int_equal(fault_plan_new(1, &p), 0);
	assert_int_equal(fault_plan_add_spec(p, "post_send.send@dst #2 -> delay(5ms)", NULL), 0);
	assert_int_equal(fault_plan_add_spec(p, "reg_mr@src -> errno(ENOMEM)", NULL), 0);
	struct hca_fault_hook h = fault_plan_hook(p);
	assert_ptr_equal(h.ctx, p);

	/* the first dst send passes; a src send is another side's count */
	assert_false(h.check(h.ctx, send, 3, VOCAB_SIDE_DST, 10, &a));
	assert_false(h.check(h.ctx, send, 3, VOCAB_SIDE_SRC, 20, &a));
	assert_true(h.check(h.ctx, send, 3, VOCAB_SIDE_DST, 30, &a));
	assert_int_equal(a.action, FAULT_ACT_DELAY);
	assert_int_equal(a.delay_ns, 5000000);
	assert_int_equal(a.site, FAULT_SITE_POST_SEND_SEND);
	assert_int_equal(a.call, 2);
	assert_string_equal(a.text, "delay(5ms)");

	const enum fault_site reg = FAULT_SITE_REG_MR;
	assert_true(h.check(h.ctx, &reg, 1, VOCAB_SIDE_SRC, 40, &a));
	assert_int_equal(a.action, FAULT_ACT_ERRNO);
	assert_int_equal(a.arg, ENOMEM);
	assert_string_equal(a.text, "errno(ENOMEM)");

	assert_int_equal(fault_plan_calls(p, FAULT_SITE_POST_SEND, FAULT_SIDE_DST), 2);
	assert_int_equal(fault_plan_calls(p, fault_site_msg(VOCAB_MSG_READY), FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_injected(p), 2);
	fault_plan_free(p);
}

/* fault_plan_attach: a world asks the plan from now on (the model's ep_create is counted). */
static void test_attach(void **state)
{
	(void)state;
	fault_plan *p;
	hca_world *w;
	hca_ep *ep;
	assert_int_equal(fault_plan_new(1, &p), 0);
	assert_int_equal(fault_plan_add_spec(p, "ep_create@src #2 -> errno(EHOSTUNREACH)", NULL), 0);
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, &w), 0);
	fault_plan_attach(w, p);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "model:hook", &ep), 0);
	hca_ep_destroy(ep);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "model:hook", &ep), -EHOSTUNREACH);
	assert_int_equal(fault_plan_calls(p, FAULT_SITE_EP_CREATE, FAULT_SIDE_SRC), 2);
	fault_plan_attach(w, NULL);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "model:hook", &ep), 0);
	assert_int_equal(fault_plan_calls(p, FAULT_SITE_EP_CREATE, FAULT_SIDE_SRC), 2);
	hca_ep_destroy(ep);
	hca_world_free(w);
	fault_plan_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_plan_no_hook),
		cmocka_unit_test(test_answer_from_the_plan),
		cmocka_unit_test(test_attach),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
