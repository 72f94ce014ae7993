/* The shared object runtime_load_test loads everywhere: one function
 * registered from a constructor, and an init symbol that counts. */
#include <dwork/dwork.h>

static int inits;

static int
loaded_add(const void *arg, size_t len, dw_reply *r)
{
	int64_t a, b;
	if (dw_args(r, arg, len, "ll", &a, &b))
		return -1;
	return dw_reply_pack(r, "li", a + b, inits);
}
DW_REGISTER(loaded_add)

int dw_load_init(void);

int
dw_load_init(void)
{
	inits++;
	return 0;
}
