/*
 * A tiny shared library for elfsym_test: one exported function and one
 * static function, found only in .symtab, whose address the library hands
 * out through an exported getter.
 */
#define ELFSYM_LIB_API __attribute__((visibility("default")))

/* Keep the function whole and under its own name (gcc would otherwise
 * make "name.constprop.0" clones); clang has no such attribute. */
#define NOCLONE
#ifdef __has_attribute
#if __has_attribute(noclone)
#undef NOCLONE
#define NOCLONE __attribute__((noclone))
#endif
#endif

typedef int (*elfsym_lib_fn)(int);

ELFSYM_LIB_API int elfsym_lib_exported(int x);
ELFSYM_LIB_API elfsym_lib_fn elfsym_lib_get_static(void);

static volatile int lib_sink;

static __attribute__((noinline)) NOCLONE int
elfsym_lib_static(int x)
{
	int i;

	for (i = 0; i < x; i++)
		lib_sink += i * 3;
	return lib_sink;
}

ELFSYM_LIB_API __attribute__((noinline)) int
elfsym_lib_exported(int x)
{
	int i;

	for (i = 0; i < x; i++)
		lib_sink ^= i + 7;
	return lib_sink + elfsym_lib_static(x);
}

ELFSYM_LIB_API elfsym_lib_fn
elfsym_lib_get_static(void)
{
	return elfsym_lib_static;
}
