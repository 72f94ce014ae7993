/*
 * A cluster under TLS (dw_options.tls, as DWORK_TLS=1): local workers,
 * a worker-to-worker call and a worker behind a relay all return the
 * right data, 1 MiB included; the workers learned the switch from the
 * master's handshake; and the bytes the relay saw each way hold no trace
 * of a known argument or result, while the same call on a plaintext
 * cluster (this program again, in a child) shows it on the wire.
 */
#include "runtime/rt.h"
#include "runtime/wire.h"
#include "security_util.h"

#define KNOWN "KNOWN-PLAINTEXT-ARGUMENT-5f3a9c"

static int
tls_on(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	return dw_reply_set(r, &rt.opts.tls, sizeof rt.opts.tls);
}
DW_REGISTER(tls_on)

/* Calls echo on the worker whose id is the argument. */
static int
ask_peer(const void *arg, size_t len, dw_reply *r)
{
	int peer;
	if (len != sizeof peer)
		return dw_reply_error(r, "bad argument");
	memcpy(&peer, arg, sizeof peer);
	void *res;
	size_t n;
	int err =
	    dw_remotecall_fetch(peer, "echo", KNOWN, strlen(KNOWN), &res, &n);
	if (err)
		return dw_reply_error(r, "peer call: %s", dw_errmsg());
	dw_reply_take(r, res, n);
	return 0;
}
DW_REGISTER(ask_peer)

static int
echo_ok(int w, const void *data, size_t len)
{
	void *res;
	size_t n;
	int ok = dw_remotecall_fetch(w, "echo", data, len, &res, &n) == DW_OK &&
	         n == len && !memcmp(res, data, len);
	if (ok)
		free(res);
	return ok;
}

/* One call through a relayed worker; 1 when the relay saw KNOWN. */
static int
relayed_call_shows_known(void)
{
	static struct su_mgr M = {.relayed = 1};
	int id;
	REQUIRE(su_add(&M, &id) == 1);
	CHECK(echo_ok(id, KNOWN, strlen(KNOWN)));
	CHECK(dw_rmprocs(&id, 1, 5000) == DW_OK);
	char err[4096];
	su_worker_end(&M.w, err, sizeof err);
	pthread_join(M.relay.t, NULL); /* the recording is complete */
	int seen = memmem(M.relay.m2w, M.relay.n_m2w, KNOWN, strlen(KNOWN)) ||
	           memmem(M.relay.w2m, M.relay.n_w2m, KNOWN, strlen(KNOWN));
	CHECK(
	    !memmem(M.relay.m2w, M.relay.n_m2w, rt.cookie, strlen(rt.cookie)));
	return seen;
}

int
main(int argc, char **argv)
{
	int plain = argc > 1 && !strcmp(argv[argc - 1], "--plain");
	dw_options o = {.tls = !plain};
	if (plain)
		unsetenv("DWORK_TLS");
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	if (plain) { /* the control: prints whether the wire showed it */
		printf("seen %d\n", relayed_call_shows_known());
		dw_finalize();
		return 0;
	}
	int ids[2];
	REQUIRE(dw_addprocs(2, NULL, ids) == 2);
	for (int i = 0; i < 2; i++) {
		void *res;
		size_t n;
		CHECK(dw_remotecall_fetch(ids[i], "tls_on", NULL, 0, &res,
		                          &n) == DW_OK &&
		      n == sizeof(int) && *(int *)res == 1);
		free(res);
	}
	size_t big = 1u << 20;
	unsigned char *data = malloc(big);
	REQUIRE(data);
	for (size_t i = 0; i < big; i++)
		data[i] = (unsigned char)(i * 2654435761u >> 24);
	CHECK(echo_ok(ids[0], data, big));
	CHECK(echo_ok(ids[1], data, 100)); /* small after big */
	free(data);
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(ids[1], "ask_peer", &ids[0], sizeof ids[0],
	                          &res, &n) == DW_OK &&
	      n == strlen(KNOWN) && !memcmp(res, KNOWN, n));
	free(res);
	CHECK(!relayed_call_shows_known()); /* encrypted on the wire */

	/* the control: without TLS the same call shows the argument */
	char cmd[600], line[64] = "";
	snprintf(cmd, sizeof cmd, "/proc/%d/exe --plain", (int)getpid());
	FILE *p = popen(cmd, "r");
	while (p && fgets(line, sizeof line, p) && strncmp(line, "seen", 4))
		;
	CHECK(p && pclose(p) == 0);
	CHECK(!strcmp(line, "seen 1\n"));
	CHECK(dw_finalize() == DW_OK);
	CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
	return tu_report("security_tls");
}
